// File: reference/tools/lmcache_serde_main.cc
//
// lmcache-serde: runs raw element buffers through any registered serde, from the shell.
//
//   lmcache-serde encode --config '{"type":"fp8"}' --dtype bfloat16 < raw > bytes
//   lmcache-serde decode --config '{"type":"fp8"}' --dtype float16 [--count N] < bytes > raw
//   lmcache-serde list
//
// Buffers are little-endian element arrays on stdin / stdout, viewed as one 1-D group.
//   encode: the input holds a whole number of --dtype elements; the output is the serialized
//           bytes (exactly what serialize() wrote: the temp is narrowed to that count).
//   decode: the input is the serialized bytes; the output holds --count elements of --dtype.
//           --count defaults to the number of input bytes, which is right for serdes that
//           write one byte per element (fp8); other serdes need it given.
// The object's key: serdes that bind a frame to its key (checksum's fingerprint, aesgcm's
// per-cache_salt key) need the same one for encode and decode, as LMCache passes it:
//   --chunk-hash HEX  the key's chunk hash as hex (default 0000000000000000: 8 zero bytes)
//   --cache-salt S    the key's cache_salt (default empty)
// The rest of the key is fixed: model "lmcache-serde", kv_rank 0, object_group_id 0.
// The tool drives the serde through the SerdeProcessor interface (create_serde_processor,
// submit, wait on the event fd, query), so it works for every registered serde.
//
// Exit status: 0 on success; 2 when the input is rejected (usage, bad JSON, unknown serde or
// dtype, a size that is not a whole number of elements, a serde task that fails); 1 for any
// other error (I/O, system, timeout). Messages go to stderr.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/core/dtype.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/core/hex.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/serde/serde_utils.h"

namespace lmcache {
namespace {

constexpr int kExitRejected = 2;
constexpr int kExitFailure = 1;

// The input was rejected (exit 2); std::invalid_argument from the library counts as well.
struct InputError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

std::vector<std::byte> read_stdin() {
  std::vector<std::byte> out;
  std::byte chunk[1 << 16];
  for (;;) {
    std::size_t n = std::fread(chunk, 1, sizeof chunk, stdin);
    out.insert(out.end(), chunk, chunk + n);
    if (n < sizeof chunk) {
      if (std::ferror(stdin)) throw std::system_error(errno, std::generic_category(), "stdin");
      return out;
    }
  }
}

void write_stdout(std::span<const std::byte> bytes) {
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) {
    throw std::system_error(errno, std::generic_category(), "stdout");
  }
  if (std::fflush(stdout) != 0) throw std::system_error(errno, std::generic_category(), "stdout");
}

SerdeProcessorPtr make_processor(const std::string& config_text) {
  Json config;
  try {
    config = Json::parse(config_text);
  } catch (const Json::parse_error& e) {
    throw InputError(std::string("--config is not valid JSON: ") + e.what());
  }
  return create_serde_processor(config);
}

// The key an object is encoded / decoded under (see the header comment).
ObjectKey key_of(const std::string& chunk_hash_hex, const std::string& cache_salt) {
  std::optional<std::string> chunk_hash = bytes_from_hex(chunk_hash_hex);
  if (!chunk_hash) {
    throw InputError("--chunk-hash '" + chunk_hash_hex +
                     "' is not hex (pairs of digits 0-9, a-f, A-F)");
  }
  return ObjectKey(std::move(*chunk_hash), "lmcache-serde", 0, 0, cache_salt);
}

std::shared_ptr<MemoryObj> buffer_of(std::size_t count, DType dtype) {
  return MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(count)}, dtype));
}

// Waits for task `id` through the direction's event fd, scanning after every wake-up.
void await(SerdeProcessor& proc, TaskId id, bool serialize, std::chrono::seconds timeout) {
  const int fd = serialize ? proc.get_serialize_event_fd() : proc.get_deserialize_event_fd();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::optional<bool> result =
        serialize ? proc.query_serialize_result(id) : proc.query_deserialize_result(id);
    if (result) {
      if (*result) return;
      std::string why = "no reason given";
      if (auto* async = dynamic_cast<AsyncSerdeProcessor*>(&proc)) {
        why = async->failure_message(id).value_or(why);
      }
      throw InputError(std::string(serialize ? "encode" : "decode") + " failed: " + why);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw std::runtime_error("timed out after " + std::to_string(timeout.count()) +
                               " s waiting for the serde");
    }
    if (wait_readable(fd, left)) consume_fd(fd);
  }
}

int run_encode(const std::string& config_text, const std::string& dtype_text, const ObjectKey& key,
               std::chrono::seconds timeout) {
  const DType dtype = dtype_from_name(dtype_text);
  const std::vector<std::byte> input = read_stdin();
  const std::size_t esize = element_size(dtype);
  if (input.size() % esize != 0) {
    throw InputError("input has " + std::to_string(input.size()) +
                     " bytes, not a whole number of " + std::string(dtype_name(dtype)) +
                     " elements (" + std::to_string(esize) + " bytes each)");
  }
  SerdeProcessorPtr proc = make_processor(config_text);
  auto src = buffer_of(input.size() / esize, dtype);
  if (!input.empty()) std::memcpy(src->data(), input.data(), input.size());
  auto dst = MemoryObj::allocate(serialized_layout_desc(src->layout(), *proc));
  TaskId id = proc->submit_serialize({src}, {dst}, {key});
  await(*proc, id, /*serialize=*/true, timeout);
  proc->close();
  write_stdout(dst->bytes());  // narrowed to the bytes written
  return 0;
}

int run_decode(const std::string& config_text, const std::string& dtype_text, std::int64_t count,
               const ObjectKey& key, std::chrono::seconds timeout) {
  const DType dtype = dtype_from_name(dtype_text);
  const std::vector<std::byte> input = read_stdin();
  SerdeProcessorPtr proc = make_processor(config_text);
  auto src = buffer_of(input.size(), DType::kUInt8);
  if (!input.empty()) std::memcpy(src->data(), input.data(), input.size());
  auto dst = buffer_of(count < 0 ? input.size() : static_cast<std::size_t>(count), dtype);
  TaskId id = proc->submit_deserialize({src}, {dst}, {key});
  await(*proc, id, /*serialize=*/false, timeout);
  proc->close();
  write_stdout(dst->bytes());
  return 0;
}

int run_list() {
  for (const std::string& name : registered_serde_types()) std::cout << name << '\n';
  std::cout.flush();
  return std::cout ? 0 : kExitFailure;
}

int run(int argc, char** argv) {
  CLI::App app{"Encode / decode raw little-endian element buffers with a registered serde."};
  app.require_subcommand(1);

  std::string config_text;
  std::string dtype_text;
  std::int64_t count = -1;
  int timeout_s = 300;
  std::string chunk_hash_hex = "0000000000000000";
  std::string cache_salt;

  auto add_common = [&](CLI::App* sub, const char* dtype_help) {
    sub->add_option("--config", config_text,
                    R"(serde config as JSON, e.g. '{"type":"fp8","fp8_dtype":"float8_e5m2"}')")
        ->required();
    sub->add_option("--dtype", dtype_text, dtype_help)->required();
    sub->add_option("--timeout", timeout_s, "seconds to wait for the serde (default 300)")
        ->check(CLI::PositiveNumber);
    sub->add_option("--chunk-hash", chunk_hash_hex,
                    "the object key's chunk hash, hex (default 0000000000000000)");
    sub->add_option("--cache-salt", cache_salt, "the object key's cache_salt (default empty)");
  };
  CLI::App* encode = app.add_subcommand("encode", "stdin: raw elements -> stdout: serialized");
  add_common(encode, "element dtype of the input (float32, float16, bfloat16, ...)");
  CLI::App* decode = app.add_subcommand("decode", "stdin: serialized -> stdout: raw elements");
  add_common(decode, "element dtype of the output (float32, float16, bfloat16, ...)");
  decode
      ->add_option("--count", count,
                   "elements to decode (default: the number of input bytes, as for fp8)")
      ->check(CLI::NonNegativeNumber);
  CLI::App* list = app.add_subcommand("list", "print the registered serde types");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every parse error is a rejected input.
    return app.exit(e) == 0 ? 0 : kExitRejected;
  }

  try {
    if (list->parsed()) return run_list();
    const std::chrono::seconds timeout(timeout_s);
    const ObjectKey key = key_of(chunk_hash_hex, cache_salt);
    if (encode->parsed()) return run_encode(config_text, dtype_text, key, timeout);
    return run_decode(config_text, dtype_text, count, key, timeout);
  } catch (const std::invalid_argument& e) {
    std::cerr << "lmcache-serde: " << e.what() << '\n';
    return kExitRejected;
  } catch (const std::exception& e) {
    std::cerr << "lmcache-serde: error: " << e.what() << '\n';
    return kExitFailure;
  }
}

}  // namespace
}  // namespace lmcache

int main(int argc, char** argv) { return lmcache::run(argc, argv); }
