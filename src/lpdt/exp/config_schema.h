#pragma once
// A generic, table-driven configuration schema (docs/config.md).
//
// Every key is declared once, with its full dotted name ("optim.lr"), type, default, accepted
// range or choices and a one-line doc. A configuration is resolved in three layers:
//
//   defaults  <  one TOML file  <  command-line overrides (`--set section.key=value`)
//
// Every value is validated against its declaration, then the schema's cross-key checks run. A
// problem is a ConfigError whose message names where the value came from (`file:line`, or the
// `--set` argument), the key, the value and what was expected; all problems of one resolution are
// reported together, one per line. The resolved configuration writes itself back as TOML (every
// key, documented) and as JSON.
//
// This header needs neither torch nor toml++: toml++ stays inside config_schema.cpp.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lpdt {

// The text of a TOML file the user named (`what`: "config file", "sweep file", ...).
// ConfigError "<what> '<path>' cannot be read: <reason>" for a missing path, a folder or another
// non-file, and one the system refuses to open (the system's reason, e.g. permission denied).
std::string read_toml_file_text(const std::string& path, const std::string& what);

// The types a key can have. The order matches the alternatives of ConfigValue.
enum class ConfigType { kBool, kInt, kFloat, kString, kIntList, kFloatList };

// A value of one of the ConfigType types (ints are TOML's 64-bit integers).
using ConfigValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                                 std::vector<double>>;

// "bool", "int", "float", "string", "list of ints", "list of floats".
std::string_view config_type_name(ConfigType type);
ConfigType config_type_of(const ConfigValue& value);

// A value written as TOML: true, 3, 0.1, 1e-4, "text", [100, 150]. Floats use the shortest text
// that reads back to the same double, so writing and parsing again is exact.
std::string format_config_value(const ConfigValue& value);

// One end of a numeric range.
struct ConfigBound {
  double value = 0;
  bool inclusive = true;
};

// The declaration of one key. Built by ConfigSchema::add_*, refined with the chained setters:
//   schema.add_float("optim.lr", 0.1, "Base learning rate.").greater_than(0);
class KeySpec {
 public:
  KeySpec(std::string name, ConfigType type, ConfigValue default_value, std::string doc);

  // Numeric range (ints, floats, and each element of a list).
  KeySpec& at_least(double min);      // value >= min
  KeySpec& greater_than(double min);  // value > min
  KeySpec& at_most(double max);       // value <= max
  KeySpec& less_than(double max);     // value < max
  // Accepted values of a string key (an enum).
  KeySpec& one_of(std::vector<std::string> choices);

  const std::string& name() const { return name_; }
  std::string_view section() const;  // "optim" for "optim.lr" ("" for a top-level key)
  std::string_view leaf() const;     // "lr" for "optim.lr"
  ConfigType type() const { return type_; }
  const ConfigValue& default_value() const { return default_value_; }
  const std::string& doc() const { return doc_; }
  const std::optional<ConfigBound>& min() const { return min_; }
  const std::optional<ConfigBound>& max() const { return max_; }
  const std::vector<std::string>& choices() const { return choices_; }

  // What an accepted value looks like: "a float > 0", "an int in [0, 10]", "one of cpu, cuda",
  // "a list of ints, each >= 1".
  std::string expectation() const;
  // The accepted values without the type: "> 0", "[0, 1]", "cpu | cuda", "" when any value of
  // the type is accepted.
  std::string accepted() const;
  // Why `value` (of this key's type) is not accepted; nullopt when it is.
  std::optional<std::string> check(const ConfigValue& value) const;

 private:
  std::string name_;
  ConfigType type_;
  ConfigValue default_value_;
  std::string doc_;
  std::optional<ConfigBound> min_;
  std::optional<ConfigBound> max_;
  std::vector<std::string> choices_;
};

// Where a resolved value came from.
struct ValueOrigin {
  enum class Kind { kDefault, kFile, kOverride, kProgram };
  Kind kind = Kind::kDefault;
  std::string source;  // the file path (kFile), the whole `key=value` argument (kOverride)
  int line = 0;  // kFile: the line; kOverride: the argument's position among the --set ones

  // "default", "configs/quick.toml:7", "--set optim.lr=0.05", "program".
  std::string where() const;
};

class Config;

// A cross-key rule. `keys` are the keys it reads; `check` returns why the combination is
// rejected (nullopt when it is fine). The error is reported at the location of the involved key
// that was set last (an override before a file line before a default), followed by every involved
// key's value and origin.
struct CrossCheck {
  std::vector<std::string> keys;
  std::function<std::optional<std::string>(const Config&)> check;
};

class ConfigSchema {
 public:
  // `title` heads the printed help and the written TOML ("lpdt experiment configuration").
  explicit ConfigSchema(std::string title);

  // Declare a key. The returned reference stays valid for the schema's lifetime. Declaring a
  // name twice, or a key whose name is another key's section, is an internal error.
  KeySpec& add_bool(std::string name, bool default_value, std::string doc);
  KeySpec& add_int(std::string name, std::int64_t default_value, std::string doc);
  KeySpec& add_float(std::string name, double default_value, std::string doc);
  KeySpec& add_string(std::string name, std::string default_value, std::string doc);
  KeySpec& add_int_list(std::string name, std::vector<std::int64_t> default_value, std::string doc);
  KeySpec& add_float_list(std::string name, std::vector<double> default_value, std::string doc);
  // Declare a cross-key rule; its keys must already be declared.
  void add_check(CrossCheck check);

  const std::string& title() const { return title_; }
  std::size_t size() const { return keys_.size(); }
  const KeySpec& key(std::size_t index) const { return keys_[index]; }
  // The index of a key, or nullopt for an unknown name.
  std::optional<std::size_t> find(std::string_view name) const;
  const KeySpec& at(std::string_view name) const;  // an unknown name is an internal error
  // Section names in declaration order ("run", "data", ...).
  std::vector<std::string> sections() const;
  // The known name closest to `name` (a typo, or a key put in the wrong section), if any is
  // close enough to be a useful suggestion.
  std::optional<std::string> suggest(std::string_view name) const;

  // The defaults alone. A default that its own declaration rejects is an internal error.
  Config defaults() const;
  // defaults < the TOML file at `path` (if any) < `overrides` ("key=value" each, in order; a
  // later one wins). Throws ConfigError listing every problem, one per line.
  Config resolve(const std::optional<std::string>& path,
                 const std::vector<std::string>& overrides) const;
  // The same from TOML text; `source_name` stands for the file name in messages.
  Config resolve_text(std::string_view toml_text, std::string_view source_name,
                      const std::vector<std::string>& overrides) const;

  // Every key with type, default, accepted values and doc, grouped by section (for
  // `lpdt train --help-config`).
  std::string help_text() const;
  // The same as Markdown tables, one per section (for docs/config.md).
  std::string markdown() const;

 private:
  friend class Config;
  KeySpec& add(KeySpec spec);
  // Runs the cross checks on a config whose keys are all valid; appends the problems.
  void run_checks(const Config& config, std::vector<std::string>& errors) const;
  Config resolve_impl(const std::optional<std::string>& path,
                      const std::optional<std::string_view>& text,
                      const std::vector<std::string>& overrides) const;

  std::string title_;
  std::deque<KeySpec> keys_;  // a deque keeps references from add_* valid
  std::map<std::string, std::size_t, std::less<>> index_;
  std::vector<CrossCheck> checks_;
};

// A resolved configuration: one valid value per key of its schema, with its origin. The schema
// must outlive the Config.
class Config {
 public:
  explicit Config(const ConfigSchema& schema);  // the defaults

  const ConfigSchema& schema() const { return *schema_; }

  // Typed access. Asking for an unknown key, or with the wrong type, is an internal error.
  bool get_bool(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const std::vector<std::int64_t>& get_int_list(std::string_view key) const;
  const std::vector<double>& get_float_list(std::string_view key) const;
  const ConfigValue& value(std::string_view key) const;
  const ValueOrigin& origin(std::string_view key) const;
  // "configs/quick.toml:7", "--set optim.lr=0.05" or "default".
  std::string where(std::string_view key) const;
  // "'optim.lr' = 0.05 (from --set optim.lr=0.05)".
  std::string describe(std::string_view key) const;

  // Set one key from a program (for example when a typed struct is written back). An int is
  // accepted for a float key. A value the key does not accept is a ConfigError.
  void set(std::string_view key, ConfigValue value,
           ValueOrigin origin = {ValueOrigin::Kind::kProgram, "", 0});
  // Run the schema's cross-key checks; throws ConfigError listing every problem.
  void validate() const;

  // Every key with its value, grouped by section in declaration order, each preceded by its doc
  // as a comment; a value set by a file or --set is followed by a comment naming its origin.
  // Parsing the text again gives the same values.
  std::string to_toml() const;
  // {"section": {"key": value, ...}, ...}.
  nlohmann::json to_json() const;

  // Same values (origins are not compared).
  bool operator==(const Config& other) const;

 private:
  friend class ConfigSchema;
  const ConfigSchema* schema_;
  std::vector<ConfigValue> values_;   // indexed like the schema's keys
  std::vector<ValueOrigin> origins_;  // indexed like the schema's keys
};

}  // namespace lpdt
