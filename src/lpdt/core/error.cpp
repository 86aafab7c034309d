#include "lpdt/core/error.h"

namespace lpdt {

void fail_internal(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(std::string("internal error: ") + condition + " failed at " + file + ":" +
                      std::to_string(line) + ": " + message);
}

}  // namespace lpdt
