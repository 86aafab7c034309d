#include "lpdt/exp/config_schema.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/core/file_text.h"
#include "lpdt/core/string_literal.h"
#include "lpdt/exp/toml_error_text.h"

namespace lpdt {

std::string read_toml_file_text(const std::string& path, const std::string& what) {
  std::optional<std::string> text;
  try {
    text = read_file_text(path);
  } catch (const UserError& e) {
    throw ConfigError(what + " " + e.what());  // "'<path>' cannot be read: <reason>"
  }
  if (!text) throw ConfigError(what + " '" + path + "' cannot be read: no such file");
  return *text;
}
namespace {

// ---------------------------------------------------------------------------------------------
// Text helpers

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

// Shortest text that reads back to the same double, in TOML syntax: always has a '.' or an
// exponent ("1.0", "0.1", "1e-4"), so that TOML reads it as a float.
std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  LPDT_CHECK(result.ec == std::errc(), "to_chars failed on a double");
  std::string text(buffer, result.ptr);
  // to_chars writes exponents like printf ("1e-04", "1e+20"); TOML accepts them, but "1e-4" and
  // "1e20" read better.
  if (const auto e = text.find('e'); e != std::string::npos) {
    std::string exponent = text.substr(e + 1);
    std::string sign;
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
      if (exponent[0] == '-') sign = "-";
      exponent.erase(0, 1);
    }
    exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
    text = text.substr(0, e) + "e" + sign + exponent;
  }
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// A range bound for humans: "0", "1", "0.5", "1e-4".
std::string format_number(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  return format_float(value);
}

// Text safe inside a one-line TOML comment.
std::string comment_safe(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), so that
// "topolgy" is one edit away from "topology".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// Close enough to be a typo: at most 2 edits, or a quarter of the word, and not a rewrite of
// the whole word (so "c" does not suggest "a").
bool is_close(std::string_view typed, std::size_t distance) {
  return distance <= std::max<std::size_t>(2, typed.size() / 4) && distance < typed.size();
}

std::optional<std::string> closest(std::string_view typed, const std::vector<std::string>& names) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& name : names) {
    const std::size_t distance = edit_distance(typed, name);
    if (!best || distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  if (best && is_close(typed, best_distance)) return best;
  return std::nullopt;
}

std::string_view section_of(std::string_view name) {
  const auto dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : name.substr(0, dot);
}

std::string_view leaf_of(std::string_view name) {
  const auto dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

bool is_bare_key(std::string_view part) {
  if (part.empty()) return false;
  return std::all_of(part.begin(), part.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

std::string_view article_type(ConfigType type) {
  switch (type) {
    case ConfigType::kBool:
      return "a bool (true or false)";
    case ConfigType::kInt:
      return "an int";
    case ConfigType::kFloat:
      return "a float";
    case ConfigType::kString:
      return "a string";
    case ConfigType::kIntList:
      return "a list of ints";
    case ConfigType::kFloatList:
      return "a list of floats";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// toml++ nodes

std::string node_kind(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::boolean:
      return "a bool";
    case toml::node_type::integer:
      return "an int";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::array:
      return "a list";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

// A node as TOML text, for messages.
std::string format_node(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::boolean:
      return node.as_boolean()->get() ? "true" : "false";
    case toml::node_type::integer:
      return std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point:
      return format_float(node.as_floating_point()->get());
    case toml::node_type::string:
      return double_quoted_literal(node.as_string()->get());
    case toml::node_type::array: {
      std::vector<std::string> parts;
      for (const toml::node& element : *node.as_array()) parts.push_back(format_node(element));
      return "[" + join(parts, ", ") + "]";
    }
    case toml::node_type::table:
      return "{...}";
    default: {
      std::ostringstream out;
      node.visit([&out](const auto& n) { out << n; });
      return out.str();
    }
  }
}

// The value of `node` as `type`, or nullopt when the node has another type. An int is accepted
// where a float is expected, also inside lists.
std::optional<ConfigValue> node_value(const toml::node& node, ConfigType type) {
  switch (type) {
    case ConfigType::kBool:
      if (node.is_boolean()) return ConfigValue(node.as_boolean()->get());
      return std::nullopt;
    case ConfigType::kInt:
      if (node.is_integer()) return ConfigValue(node.as_integer()->get());
      return std::nullopt;
    case ConfigType::kFloat:
      if (node.is_floating_point()) return ConfigValue(node.as_floating_point()->get());
      if (node.is_integer()) return ConfigValue(static_cast<double>(node.as_integer()->get()));
      return std::nullopt;
    case ConfigType::kString:
      if (node.is_string()) return ConfigValue(node.as_string()->get());
      return std::nullopt;
    case ConfigType::kIntList: {
      if (!node.is_array()) return std::nullopt;
      std::vector<std::int64_t> values;
      for (const toml::node& element : *node.as_array()) {
        if (!element.is_integer()) return std::nullopt;
        values.push_back(element.as_integer()->get());
      }
      return ConfigValue(std::move(values));
    }
    case ConfigType::kFloatList: {
      if (!node.is_array()) return std::nullopt;
      std::vector<double> values;
      for (const toml::node& element : *node.as_array()) {
        if (element.is_floating_point()) {
          values.push_back(element.as_floating_point()->get());
        } else if (element.is_integer()) {
          values.push_back(static_cast<double>(element.as_integer()->get()));
        } else {
          return std::nullopt;
        }
      }
      return ConfigValue(std::move(values));
    }
  }
  return std::nullopt;
}

// "got a string", "got a list containing a string".
std::string got_kind(const toml::node& node) {
  if (node.is_array()) {
    for (const toml::node& element : *node.as_array()) {
      if (!element.is_integer() && !element.is_floating_point()) {
        return "got a list containing " + node_kind(element);
      }
    }
    for (const toml::node& element : *node.as_array()) {
      if (element.is_floating_point()) return "got a list containing a float";
    }
  }
  return "got " + node_kind(node);
}

int source_line(const toml::key& key, const toml::node& node) {
  const auto line = key.source().begin.line;
  return static_cast<int>(line > 0 ? line : node.source().begin.line);
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Values

std::string_view config_type_name(ConfigType type) {
  switch (type) {
    case ConfigType::kBool:
      return "bool";
    case ConfigType::kInt:
      return "int";
    case ConfigType::kFloat:
      return "float";
    case ConfigType::kString:
      return "string";
    case ConfigType::kIntList:
      return "list of ints";
    case ConfigType::kFloatList:
      return "list of floats";
  }
  return "?";
}

ConfigType config_type_of(const ConfigValue& value) {
  return static_cast<ConfigType>(value.index());
}

std::string format_config_value(const ConfigValue& value) {
  struct Formatter {
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_float(v); }
    std::string operator()(const std::string& v) const { return double_quoted_literal(v); }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      std::vector<std::string> parts;
      for (const auto x : v) parts.push_back(std::to_string(x));
      return "[" + join(parts, ", ") + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      std::vector<std::string> parts;
      for (const auto x : v) parts.push_back(format_float(x));
      return "[" + join(parts, ", ") + "]";
    }
  };
  return std::visit(Formatter{}, value);
}

// -----------------------------------------------------------------------------------------------
// KeySpec

KeySpec::KeySpec(std::string name, ConfigType type, ConfigValue default_value, std::string doc)
    : name_(std::move(name)),
      type_(type),
      default_value_(std::move(default_value)),
      doc_(std::move(doc)) {
  LPDT_CHECK(config_type_of(default_value_) == type_,
             "default of '" + name_ + "' does not have the key's type");
}

KeySpec& KeySpec::at_least(double min) {
  min_ = ConfigBound{min, true};
  return *this;
}
KeySpec& KeySpec::greater_than(double min) {
  min_ = ConfigBound{min, false};
  return *this;
}
KeySpec& KeySpec::at_most(double max) {
  max_ = ConfigBound{max, true};
  return *this;
}
KeySpec& KeySpec::less_than(double max) {
  max_ = ConfigBound{max, false};
  return *this;
}
KeySpec& KeySpec::one_of(std::vector<std::string> choices) {
  LPDT_CHECK(type_ == ConfigType::kString, "choices on the non-string key '" + name_ + "'");
  LPDT_CHECK(!choices.empty(), "empty choices for '" + name_ + "'");
  choices_ = std::move(choices);
  return *this;
}

std::string_view KeySpec::section() const { return section_of(name_); }
std::string_view KeySpec::leaf() const { return leaf_of(name_); }

std::string KeySpec::accepted() const {
  if (!choices_.empty()) return join(choices_, " | ");
  if (min_ && max_) {
    return std::string(min_->inclusive ? "[" : "(") + format_number(min_->value) + ", " +
           format_number(max_->value) + (max_->inclusive ? "]" : ")");
  }
  if (min_) return std::string(min_->inclusive ? ">= " : "> ") + format_number(min_->value);
  if (max_) return std::string(max_->inclusive ? "<= " : "< ") + format_number(max_->value);
  return "";
}

std::string KeySpec::expectation() const {
  if (!choices_.empty()) return "one of " + join(choices_, ", ");
  std::string range = accepted();
  if (range.empty()) return std::string(article_type(type_));
  if (min_ && max_) range = "in " + range;
  if (type_ == ConfigType::kIntList || type_ == ConfigType::kFloatList) {
    return std::string(article_type(type_)) + ", each " + range;
  }
  return std::string(article_type(type_)) + " " + range;
}

std::optional<std::string> KeySpec::check(const ConfigValue& value) const {
  LPDT_CHECK(config_type_of(value) == type_,
             "check of '" + name_ + "' with a value of type " +
                 std::string(config_type_name(config_type_of(value))));
  const auto in_range = [this](double x) {
    if (!std::isfinite(x)) return false;
    if (min_ && (min_->inclusive ? x < min_->value : x <= min_->value)) return false;
    if (max_ && (max_->inclusive ? x > max_->value : x >= max_->value)) return false;
    return true;
  };
  const auto out_of_range = "is out of range: expected " + expectation();
  switch (type_) {
    case ConfigType::kBool:
      return std::nullopt;
    case ConfigType::kInt:
      if (!in_range(static_cast<double>(std::get<std::int64_t>(value)))) return out_of_range;
      return std::nullopt;
    case ConfigType::kFloat: {
      const double x = std::get<double>(value);
      if (!std::isfinite(x)) return "is not a finite number: expected " + expectation();
      if (!in_range(x)) return out_of_range;
      return std::nullopt;
    }
    case ConfigType::kString: {
      const auto& text = std::get<std::string>(value);
      // A run writes its configuration as TOML and JSON, which are UTF-8 text.
      if (const auto at = first_invalid_utf8_byte(text)) {
        return "is not valid UTF-8 (byte " + std::to_string(*at + 1) + ": " +
               printable(text.substr(*at, 1)) +
               "): expected UTF-8 text, as the run's config.toml and summary.json are";
      }
      if (choices_.empty() || std::find(choices_.begin(), choices_.end(), text) != choices_.end()) {
        return std::nullopt;
      }
      std::string message = "is not an accepted value: expected " + expectation();
      if (const auto suggestion = closest(text, choices_)) {
        message += "; did you mean " + double_quoted_literal(*suggestion) + "?";
      }
      return message;
    }
    case ConfigType::kIntList: {
      const auto& list = std::get<std::vector<std::int64_t>>(value);
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (!in_range(static_cast<double>(list[i]))) {
          return "is out of range at element " + std::to_string(i) + " (" +
                 std::to_string(list[i]) + "): expected " + expectation();
        }
      }
      return std::nullopt;
    }
    case ConfigType::kFloatList: {
      const auto& list = std::get<std::vector<double>>(value);
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (!in_range(list[i])) {
          return "is out of range at element " + std::to_string(i) + " (" + format_float(list[i]) +
                 "): expected " + expectation();
        }
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// -----------------------------------------------------------------------------------------------
// ValueOrigin

std::string ValueOrigin::where() const {
  switch (kind) {
    case Kind::kDefault:
      return "default";
    case Kind::kFile:
      return source + ":" + std::to_string(line);
    case Kind::kOverride:
      return "--set " + source;
    case Kind::kProgram:
      return "program";
  }
  return "?";
}

namespace {
// Which origin wins when a cross-key error has to be reported at one place: the value set last.
int origin_rank(const ValueOrigin& origin) {
  switch (origin.kind) {
    case ValueOrigin::Kind::kOverride:
      return 3;
    case ValueOrigin::Kind::kProgram:
      return 2;
    case ValueOrigin::Kind::kFile:
      return 1;
    case ValueOrigin::Kind::kDefault:
      return 0;
  }
  return 0;
}
}  // namespace

// -----------------------------------------------------------------------------------------------
// ConfigSchema

ConfigSchema::ConfigSchema(std::string title) : title_(std::move(title)) {}

KeySpec& ConfigSchema::add(KeySpec spec) {
  const std::string& name = spec.name();
  std::string_view rest = name;
  while (true) {
    const auto dot = rest.find('.');
    LPDT_CHECK(is_bare_key(rest.substr(0, dot)), "key name '" + name + "' is not dotted bare keys");
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  LPDT_CHECK(!index_.count(name), "key '" + name + "' declared twice");
  for (const KeySpec& other : keys_) {
    LPDT_CHECK(other.name().rfind(name + ".", 0) != 0 && name.rfind(other.name() + ".", 0) != 0,
               "key '" + name + "' and key '" + other.name() + "' overlap as key and section");
  }
  index_.emplace(name, keys_.size());
  keys_.push_back(std::move(spec));
  return keys_.back();
}

KeySpec& ConfigSchema::add_bool(std::string name, bool default_value, std::string doc) {
  return add(KeySpec(std::move(name), ConfigType::kBool, default_value, std::move(doc)));
}
KeySpec& ConfigSchema::add_int(std::string name, std::int64_t default_value, std::string doc) {
  return add(KeySpec(std::move(name), ConfigType::kInt, default_value, std::move(doc)));
}
KeySpec& ConfigSchema::add_float(std::string name, double default_value, std::string doc) {
  return add(KeySpec(std::move(name), ConfigType::kFloat, default_value, std::move(doc)));
}
KeySpec& ConfigSchema::add_string(std::string name, std::string default_value, std::string doc) {
  return add(
      KeySpec(std::move(name), ConfigType::kString, std::move(default_value), std::move(doc)));
}
KeySpec& ConfigSchema::add_int_list(std::string name, std::vector<std::int64_t> default_value,
                                    std::string doc) {
  return add(
      KeySpec(std::move(name), ConfigType::kIntList, std::move(default_value), std::move(doc)));
}
KeySpec& ConfigSchema::add_float_list(std::string name, std::vector<double> default_value,
                                      std::string doc) {
  return add(
      KeySpec(std::move(name), ConfigType::kFloatList, std::move(default_value), std::move(doc)));
}

void ConfigSchema::add_check(CrossCheck check) {
  LPDT_CHECK(!check.keys.empty() && check.check, "a cross check needs keys and a function");
  for (const std::string& key : check.keys) {
    LPDT_CHECK(find(key).has_value(), "cross check on the undeclared key '" + key + "'");
  }
  checks_.push_back(std::move(check));
}

std::optional<std::size_t> ConfigSchema::find(std::string_view name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

const KeySpec& ConfigSchema::at(std::string_view name) const {
  const auto index = find(name);
  LPDT_CHECK(index.has_value(), "unknown configuration key '" + std::string(name) + "'");
  return keys_[*index];
}

std::vector<std::string> ConfigSchema::sections() const {
  std::vector<std::string> out;
  for (const KeySpec& key : keys_) {
    const std::string section(key.section());
    if (std::find(out.begin(), out.end(), section) == out.end()) out.push_back(section);
  }
  return out;
}

std::optional<std::string> ConfigSchema::suggest(std::string_view name) const {
  std::vector<std::string> names;
  for (const KeySpec& key : keys_) names.push_back(key.name());
  if (auto best = closest(name, names)) return best;
  // The right key in the wrong section, or without its section ("lr" for "optim.lr").
  const std::string_view leaf = leaf_of(name);
  for (const KeySpec& key : keys_) {
    if (key.leaf() == leaf) return key.name();
  }
  // A typo in the leaf and no section ("topolgy" for "graph.topology").
  std::vector<std::string> leaves;
  for (const KeySpec& key : keys_) leaves.emplace_back(key.leaf());
  if (const auto best_leaf = closest(leaf, leaves)) {
    for (const KeySpec& key : keys_) {
      if (key.leaf() == *best_leaf) return key.name();
    }
  }
  return std::nullopt;
}

Config ConfigSchema::defaults() const {
  Config config(*this);
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const auto problem = keys_[i].check(keys_[i].default_value());
    LPDT_CHECK(!problem, "the default of '" + keys_[i].name() + "' " + problem.value_or(""));
  }
  return config;
}

Config ConfigSchema::resolve(const std::optional<std::string>& path,
                             const std::vector<std::string>& overrides) const {
  return resolve_impl(path, std::nullopt, overrides);
}

Config ConfigSchema::resolve_text(std::string_view toml_text, std::string_view source_name,
                                  const std::vector<std::string>& overrides) const {
  return resolve_impl(std::string(source_name), toml_text, overrides);
}

namespace {

// What resolution needs to know about the schema's names, for error messages.
class KeyReporter {
 public:
  explicit KeyReporter(const ConfigSchema& schema) : schema_(schema) {
    for (std::size_t i = 0; i < schema.size(); ++i) {
      std::string_view section = schema.key(i).section();
      while (!section.empty()) {
        prefixes_.emplace(section);
        section = section_of(section);
      }
    }
  }

  bool is_section(std::string_view name) const { return prefixes_.count(std::string(name)) > 0; }

  // "keys of [graph]: topology, nodes, ..." / "sections: run, data, ...".
  std::string listing(std::string_view section) const {
    std::vector<std::string> leaves;
    for (std::size_t i = 0; i < schema_.size(); ++i) {
      if (schema_.key(i).section() == section) leaves.emplace_back(schema_.key(i).leaf());
    }
    if (section.empty() || leaves.empty()) return "sections: " + join(schema_.sections(), ", ");
    return "keys of [" + std::string(section) + "]: " + join(leaves, ", ");
  }

  std::string unknown_key(std::string_view name) const {
    std::string message = "unknown key '" + std::string(name) + "'";
    const auto suggestion = schema_.suggest(name);
    if (suggestion) message += "; did you mean '" + *suggestion + "'?";
    std::string_view section = section_of(name);
    if (!is_section(section) && suggestion) section = section_of(*suggestion);
    return message + " (" + listing(section) + ")";
  }

  std::string unknown_section(std::string_view name) const {
    std::string message = "unknown section [" + std::string(name) + "]";
    std::vector<std::string> sections(prefixes_.begin(), prefixes_.end());
    if (const auto suggestion = closest(name, sections)) {
      message += "; did you mean [" + *suggestion + "]?";
    }
    return message + " (sections: " + join(schema_.sections(), ", ") + ")";
  }

  std::string section_not_table(std::string_view name) const {
    return "'" + std::string(name) + "' is a section, not a key: write its keys under [" +
           std::string(name) + "] (" + listing(name) + ")";
  }

 private:
  const ConfigSchema& schema_;
  std::set<std::string> prefixes_;
};

// "key 'optim.lr' = "fast" has the wrong type: expected a float > 0, got a string".
std::string wrong_type(const KeySpec& spec, const std::string& shown, const std::string& got) {
  return "key '" + spec.name() + "' = " + shown + " has the wrong type: expected " +
         spec.expectation() + ", " + got;
}

// Splits "key=value"; nullopt when there is no '=' or no key.
std::optional<std::pair<std::string, std::string>> split_override(const std::string& argument) {
  const auto eq = argument.find('=');
  if (eq == std::string::npos) return std::nullopt;
  std::string key = trim(std::string_view(argument).substr(0, eq));
  if (key.empty()) return std::nullopt;
  return std::make_pair(std::move(key), trim(std::string_view(argument).substr(eq + 1)));
}

}  // namespace

Config ConfigSchema::resolve_impl(const std::optional<std::string>& path,
                                  const std::optional<std::string_view>& text,
                                  const std::vector<std::string>& overrides) const {
  Config config = defaults();
  std::vector<std::string> errors;
  const KeyReporter reporter(*this);

  // 1. The file.
  if (path) {
    toml::table table;
    const std::string file_text =
        text ? std::string(*text) : read_toml_file_text(*path, "config file");
    try {
      table = toml::parse(file_text, *path);
    } catch (const toml::parse_error& error) {
      const auto& begin = error.source().begin;
      throw ConfigError(
          *path + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column) +
          ": TOML syntax error: " + toml_error_text(error.description(), file_text, begin.line));
    }

    // toml++ iterates keys in sorted order: collect (line, message) and report in file order.
    std::vector<std::pair<int, std::string>> file_errors;
    const std::function<void(const toml::table&, const std::string&)> walk =
        [&](const toml::table& node_table, const std::string& prefix) {
          for (auto&& [key, node] : node_table) {
            const std::string name =
                prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
            const int line = source_line(key, node);
            const std::string where = *path + ":" + std::to_string(line);
            if (const auto index = find(name)) {
              const KeySpec& spec = keys_[*index];
              const auto value = node_value(node, spec.type());
              if (!value) {
                file_errors.emplace_back(
                    line, where + ": " + wrong_type(spec, format_node(node), got_kind(node)));
              } else if (const auto problem = spec.check(*value)) {
                file_errors.emplace_back(
                    line, where + ": key '" + name + "' = " + format_node(node) + " " + *problem);
              } else {
                config.values_[*index] = *value;
                config.origins_[*index] = ValueOrigin{ValueOrigin::Kind::kFile, *path, line};
              }
            } else if (reporter.is_section(name)) {
              if (node.is_table()) {
                walk(*node.as_table(), name);
              } else {
                file_errors.emplace_back(line, where + ": " + reporter.section_not_table(name));
              }
            } else if (prefix.empty() && node.is_table()) {
              file_errors.emplace_back(line, where + ": " + reporter.unknown_section(name));
            } else {
              file_errors.emplace_back(line, where + ": " + reporter.unknown_key(name));
            }
          }
        };
    walk(table, "");
    std::stable_sort(file_errors.begin(), file_errors.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [line, message] : file_errors) errors.push_back(std::move(message));
  }

  // 2. The overrides, in order.
  int position = 0;
  for (const std::string& argument : overrides) {
    ++position;
    const auto split = split_override(argument);
    if (!split) {
      errors.push_back("--set '" + argument +
                       "': expected key=value, for example --set optim.lr=0.05");
      continue;
    }
    const auto& [name, value_text] = *split;
    const ValueOrigin origin{ValueOrigin::Kind::kOverride, argument, position};
    const std::string where = origin.where();
    const auto index = find(name);
    if (!index) {
      errors.push_back(where + ": " +
                       (reporter.is_section(name) ? reporter.section_not_table(name)
                                                  : reporter.unknown_key(name)));
      continue;
    }
    const KeySpec& spec = keys_[*index];

    // The value is read as a TOML value; a bare word that is not valid TOML is a string. For a
    // string key the text itself is the value (so `run.name=2024` is the string "2024"), unless
    // it is a quoted TOML string.
    std::optional<toml::table> parsed;
    std::string parse_problem;
    try {
      parsed = toml::parse("v = " + value_text);
      if (parsed->size() != 1 || !parsed->contains("v")) parsed.reset();
    } catch (const toml::parse_error& error) {
      parse_problem = printable(error.description());
    }
    std::optional<ConfigValue> value;
    std::string shown = double_quoted_literal(value_text);
    std::string got = "got a string";
    if (spec.type() == ConfigType::kString) {
      const bool quoted = !value_text.empty() && (value_text[0] == '"' || value_text[0] == '\'');
      if (quoted && parsed && (*parsed)["v"].is_string()) {
        value = ConfigValue((*parsed)["v"].as_string()->get());
        // The string, not its quoted text.
        shown = double_quoted_literal((*parsed)["v"].as_string()->get());
      } else if (quoted) {
        // A quote opens a TOML string: one that does not close is a mistake (an unbalanced
        // quote in the shell), not a name that starts with a quote character.
        got = "got text that opens a TOML string but does not close it" +
              (parse_problem.empty() ? std::string() : " (" + parse_problem + ")");
      } else if (parsed && ((*parsed)["v"].is_table() || (*parsed)["v"].is_array())) {
        got = got_kind(*parsed->get("v"));  // a list or table, not a word
      } else {
        value = ConfigValue(value_text);
      }
    } else if (parsed) {
      const toml::node& node = *parsed->get("v");
      value = node_value(node, spec.type());
      shown = format_node(node);
      got = got_kind(node);
    } else if (!parse_problem.empty()) {
      got += " (the value is not valid TOML: " + parse_problem + ")";
    }
    if (!value) {
      errors.push_back(where + ": " + wrong_type(spec, shown, got));
    } else if (const auto problem = spec.check(*value)) {
      errors.push_back(where + ": key '" + name + "' = " + shown + " " + *problem);
    } else {
      config.values_[*index] = std::move(*value);
      config.origins_[*index] = origin;
    }
  }

  // 3. Cross-key rules, once every key is valid on its own.
  if (errors.empty()) run_checks(config, errors);
  if (!errors.empty()) throw ConfigError(join(errors, "\n"));
  return config;
}

void ConfigSchema::run_checks(const Config& config, std::vector<std::string>& errors) const {
  for (const CrossCheck& check : checks_) {
    const auto problem = check.check(config);
    if (!problem) continue;
    // Report at the involved key that was set last; then show every involved key.
    const std::string* blamed = &check.keys.front();
    for (const std::string& key : check.keys) {
      // Of two keys of one kind, the later line or --set.
      const ValueOrigin& a = config.origin(key);
      const ValueOrigin& b = config.origin(*blamed);
      if (std::pair(origin_rank(a), a.line) > std::pair(origin_rank(b), b.line)) blamed = &key;
    }
    std::vector<std::string> involved;
    for (const std::string& key : check.keys) involved.push_back(config.describe(key));
    errors.push_back(config.where(*blamed) + ": " + *problem + " [" + join(involved, "; ") + "]");
  }
}

std::string ConfigSchema::help_text() const {
  std::ostringstream out;
  out << title_ << ": every key, its default and accepted values.\n"
      << "Set keys in a TOML file ([section] then key = value) or on the command line with\n"
      << "--set section.key=value (a TOML value; a bare word is a string). Later sources win:\n"
      << "defaults < file < --set.\n";
  std::size_t width = 0;
  for (const KeySpec& key : keys_) {
    width =
        std::max(width, key.leaf().size() + 3 + format_config_value(key.default_value()).size());
  }
  width = std::min<std::size_t>(width, 44);
  for (const std::string& section : sections()) {
    out << "\n" << (section.empty() ? std::string("(top level)") : "[" + section + "]") << "\n";
    for (const KeySpec& key : keys_) {
      if (key.section() != section) continue;
      std::string head = std::string(key.leaf()) + " = " + format_config_value(key.default_value());
      if (head.size() < width) head.resize(width, ' ');
      std::string type(config_type_name(key.type()));
      const std::string accepted = key.accepted();
      if (!accepted.empty()) type += (key.choices().empty() ? " " : ": ") + accepted;
      out << "  " << head << "  " << type << "\n      " << key.doc() << "\n";
    }
  }
  return out.str();
}

std::string ConfigSchema::markdown() const {
  const auto cell = [](std::string text) {
    std::string out;
    for (const char c : text) {
      if (c == '|') {
        out += "\\|";
      } else if (c == '<') {
        out += "&lt;";  // so that Markdown does not read an HTML tag
      } else if (c == '\n') {
        out += ' ';
      } else {
        out += c;
      }
    }
    return out;
  };
  std::ostringstream out;
  for (const std::string& section : sections()) {
    out << "### " << (section.empty() ? std::string("Top level") : "[" + section + "]") << "\n\n"
        << "| key | type | default | accepted | description |\n"
        << "|---|---|---|---|---|\n";
    for (const KeySpec& key : keys_) {
      if (key.section() != section) continue;
      std::string accepted;
      if (!key.choices().empty()) {
        std::vector<std::string> quoted;
        for (const auto& choice : key.choices()) quoted.push_back("`" + choice + "`");
        accepted = join(quoted, ", ");
      } else {
        accepted = key.accepted().empty() ? "any" : key.accepted();
      }
      out << "| `" << key.name() << "` | " << config_type_name(key.type()) << " | `"
          << cell(format_config_value(key.default_value())) << "` | " << cell(accepted) << " | "
          << cell(key.doc()) << " |\n";
    }
    out << "\n";
  }
  return out.str();
}

// -----------------------------------------------------------------------------------------------
// Config

Config::Config(const ConfigSchema& schema) : schema_(&schema) {
  values_.reserve(schema.size());
  for (std::size_t i = 0; i < schema.size(); ++i) values_.push_back(schema.key(i).default_value());
  origins_.resize(schema.size());
}

const ConfigValue& Config::value(std::string_view key) const {
  const auto index = schema_->find(key);
  LPDT_CHECK(index.has_value(), "unknown configuration key '" + std::string(key) + "'");
  return values_[*index];
}

const ValueOrigin& Config::origin(std::string_view key) const {
  const auto index = schema_->find(key);
  LPDT_CHECK(index.has_value(), "unknown configuration key '" + std::string(key) + "'");
  return origins_[*index];
}

namespace {
template <typename T>
const T& typed(const ConfigValue& value, std::string_view key) {
  LPDT_CHECK(std::holds_alternative<T>(value),
             "configuration key '" + std::string(key) + "' read with the wrong type (it is " +
                 std::string(config_type_name(config_type_of(value))) + ")");
  return std::get<T>(value);
}
}  // namespace

bool Config::get_bool(std::string_view key) const { return typed<bool>(value(key), key); }
std::int64_t Config::get_int(std::string_view key) const {
  return typed<std::int64_t>(value(key), key);
}
double Config::get_float(std::string_view key) const { return typed<double>(value(key), key); }
const std::string& Config::get_string(std::string_view key) const {
  return typed<std::string>(value(key), key);
}
const std::vector<std::int64_t>& Config::get_int_list(std::string_view key) const {
  return typed<std::vector<std::int64_t>>(value(key), key);
}
const std::vector<double>& Config::get_float_list(std::string_view key) const {
  return typed<std::vector<double>>(value(key), key);
}

std::string Config::where(std::string_view key) const { return origin(key).where(); }

std::string Config::describe(std::string_view key) const {
  return "'" + std::string(key) + "' = " + format_config_value(value(key)) + " from " + where(key);
}

void Config::set(std::string_view key, ConfigValue value, ValueOrigin origin) {
  const auto index = schema_->find(key);
  if (!index) {
    throw ConfigError(origin.where() + ": " + KeyReporter(*schema_).unknown_key(key));
  }
  const KeySpec& spec = schema_->key(*index);
  // An int is accepted where a float is expected.
  if (spec.type() == ConfigType::kFloat && std::holds_alternative<std::int64_t>(value)) {
    value = static_cast<double>(std::get<std::int64_t>(value));
  } else if (spec.type() == ConfigType::kFloatList &&
             std::holds_alternative<std::vector<std::int64_t>>(value)) {
    const auto& ints = std::get<std::vector<std::int64_t>>(value);
    value = std::vector<double>(ints.begin(), ints.end());
  }
  if (config_type_of(value) != spec.type()) {
    throw ConfigError(origin.where() + ": " +
                      wrong_type(spec, format_config_value(value),
                                 "got a " + std::string(config_type_name(config_type_of(value)))));
  }
  if (const auto problem = spec.check(value)) {
    throw ConfigError(origin.where() + ": key '" + spec.name() +
                      "' = " + format_config_value(value) + " " + *problem);
  }
  values_[*index] = std::move(value);
  origins_[*index] = std::move(origin);
}

void Config::validate() const {
  std::vector<std::string> errors;
  schema_->run_checks(*this, errors);
  if (!errors.empty()) throw ConfigError(join(errors, "\n"));
}

std::string Config::to_toml() const {
  std::ostringstream out;
  // Origins are known when this Config was resolved from a file and --set (the CLI); a Config
  // made from a struct (to_config) has none, and the header does not promise them.
  const bool any_origin = std::any_of(origins_.begin(), origins_.end(), [](const ValueOrigin& o) {
    return o.kind == ValueOrigin::Kind::kFile || o.kind == ValueOrigin::Kind::kOverride;
  });
  out << "# " << comment_safe(schema_->title()) << ", resolved: defaults < file < --set.\n"
      << (any_origin ? "# Every key is listed with its doc; a value set by a file or --set names "
                       "its origin.\n"
                     : "# Every key is listed with its doc.\n");
  // Top-level keys must come before the first [section] header, or TOML would read them as
  // keys of that section.
  std::vector<std::string> sections = schema_->sections();
  std::stable_partition(sections.begin(), sections.end(),
                        [](const std::string& section) { return section.empty(); });
  for (const std::string& section : sections) {
    out << "\n";
    if (!section.empty()) out << "[" << section << "]\n";
    bool first = true;
    for (std::size_t i = 0; i < schema_->size(); ++i) {
      const KeySpec& spec = schema_->key(i);
      if (spec.section() != section) continue;
      if (!first) out << "\n";
      first = false;
      std::string kind(config_type_name(spec.type()));
      if (!spec.accepted().empty()) kind += "; " + spec.accepted();
      out << "# " << comment_safe(spec.doc()) << " (" << comment_safe(kind) << ")\n"
          << spec.leaf() << " = " << format_config_value(values_[i]);
      // A value from a file or --set names its origin; a program's value has none to name.
      if (origins_[i].kind == ValueOrigin::Kind::kFile ||
          origins_[i].kind == ValueOrigin::Kind::kOverride) {
        out << "  # " << comment_safe(origins_[i].where());
      }
      out << "\n";
    }
  }
  return out.str();
}

nlohmann::json Config::to_json() const {
  nlohmann::json root = nlohmann::json::object();
  for (std::size_t i = 0; i < schema_->size(); ++i) {
    const KeySpec& spec = schema_->key(i);
    nlohmann::json* node = &root;
    std::string_view rest = spec.name();
    for (auto dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
      node = &(*node)[std::string(rest.substr(0, dot))];
      rest.remove_prefix(dot + 1);
    }
    std::visit([&](const auto& v) { (*node)[std::string(rest)] = v; }, values_[i]);
  }
  return root;
}

bool Config::operator==(const Config& other) const {
  return schema_ == other.schema_ && values_ == other.values_;
}

}  // namespace lpdt
