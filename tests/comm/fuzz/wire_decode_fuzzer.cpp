// libFuzzer target for the wire payload decoder (docs/wire.md, "Fuzzing"; run it with
// scripts/fuzz_wire.sh). The rule: decode either throws WireError or returns a message whose
// encoding is exactly the input (payloads are canonical). Anything else aborts: another
// exception, a sanitizer report, a non-canonical success.
//
// Each input is decoded twice: as it is (exercising the size and checksum checks) and with its
// size field and checksum made consistent, since random bytes almost never carry a valid CRC-32
// and the structure checks behind it would otherwise go unexplored.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "lpdt/comm/wire_payload.h"

namespace {

void decode_canonically(std::span<const std::uint8_t> bytes) {
  lpdt::comm::Message message;
  try {
    message = lpdt::comm::decode(bytes);
  } catch (const lpdt::comm::WireError&) {
    return;
  }
  const std::vector<std::uint8_t> again = lpdt::comm::encode(message);
  if (again.size() != bytes.size() || std::memcmp(again.data(), bytes.data(), bytes.size()) != 0) {
    std::fprintf(stderr,
                 "wire_decode_fuzzer: decoded %zu bytes, but re-encoding gives %zu other bytes\n",
                 bytes.size(), again.size());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  decode_canonically(input);
  if (size >= lpdt::comm::kHeaderBytes) {
    std::vector<std::uint8_t> sealed(input.begin(), input.end());
    const auto total = static_cast<std::uint32_t>(size);
    for (int i = 0; i < 4; ++i) sealed[28 + i] = static_cast<std::uint8_t>(total >> (8 * i));
    lpdt::comm::reseal(sealed);
    decode_canonically(sealed);
  }
  return 0;
}
