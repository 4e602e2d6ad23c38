// File: reference/tools/lmcache_serde_main.cc
//
// lmcache-serde: runs raw element buffers through any registered serde, from the shell.
//
//   lmcache-serde encode --config '{"type":"fp8"}' --dtype bfloat16 < raw > bytes
//   lmcache-serde decode --config '{"type":"fp8"}' --dtype float16 [--count N] < bytes > raw
//   lmcache-serde list
//   lmcache-serde lmcr verify [--max-bytes N] < record
//
// Buffers are little-endian element arrays on stdin / stdout, viewed as one 1-D group.
//   encode: the input holds a whole number of --dtype elements; the output is the serialized
//           bytes (exactly what serialize() wrote: the temp is narrowed to that count).
//   decode: the input is one serialized frame; the output holds its elements as --dtype.
//           The element count comes from the frame's length. The tool learns how a frame's
//           length follows its element count from the serde itself: it encodes zero-filled
//           probes of 1, 2 and 3 elements of --dtype (under the same key) and, when their
//           lengths grow by the same number of bytes per element and a fourth probe of 67
//           varied elements has the length that predicts, has
//             length = per_element x count + fixed
//           (fp8: 1 x count; checksum: element size x count + 17; aesgcm and encrypt: + 29;
//           a chain: its stages composed, e.g. fp8 -> checksum: count + 17). The count is then
//           (input length - fixed) / per_element; an input no count gives is refused (exit 2)
//           with both lengths named. --count N, when given, must agree with that (else exit 2
//           naming --count); it is needed only for a serde whose frame length does not grow
//           by a fixed number of bytes per element (of the built-ins, lmcr: it compresses).
//   lmcr verify: the input is one LMCR v1 record (docs/lmcr.md); every check of the format is
//           run and every chunk inflated (into at most --max-bytes, default 1 GiB: a record
//           that says it holds more is refused before anything is allocated); prints the
//           record's framing, chunks and sizes. An invalid record exits 2 naming the first
//           failed check.
// The object's key: serdes that bind a frame to its key (checksum's fingerprint, aesgcm's
// per-cache_salt key) need the same one for encode and decode, as LMCache passes it:
//   --chunk-hash HEX  the key's chunk hash as hex (default 0000000000000000: 8 zero bytes)
//   --cache-salt S    the key's cache_salt (default empty)
// The rest of the key is fixed: model "lmcache-serde", kv_rank 0, object_group_id 0.
// The tool drives the serde through the SerdeProcessor interface (create_serde_processor,
// submit, wait on the event fd, query), so it works for every registered serde.
//
// Exit status: 0 on success; 2 when the input is rejected (usage: an option out of its range,
// bad JSON, unknown serde or dtype, a size that is not a whole number of elements or frame, a
// --count that disagrees with the frame, a serde task that fails); 1 for any other error (I/O,
// system, timeout, out of memory). Messages go to stderr, each naming what failed
// (cli_support.h guarded_main()).

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli_support.h"
#include "lmcache/core/config.h"
#include "lmcache/core/dtype.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/core/hex.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/lmcr_record.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/serde/serde_utils.h"

namespace lmcache {
namespace {

constexpr int kExitRejected = cli::kExitUsage;
constexpr int kExitFailure = 1;
// The most elements --count may name: 2^40 (a terabyte of uint8, 4 of float32).
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 40;

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

// A 1-D buffer of `count` elements of `dtype`, `what` naming it in the error when memory runs
// out (std::runtime_error, exit 1).
std::shared_ptr<MemoryObj> buffer_of(std::size_t count, DType dtype, const char* what) {
  try {
    return MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(count)}, dtype));
  } catch (const std::bad_alloc&) {
    throw std::runtime_error("out of memory for " + std::string(what) + ": " +
                             std::to_string(count) + " " + std::string(dtype_name(dtype)) +
                             " element(s) of " + std::to_string(element_size(dtype)) + " byte(s)");
  }
}

// Waits for task `id` through the direction's event fd, scanning after every wake-up. A failed
// task is an InputError "<what> failed: <the serde's reason>".
void await(SerdeProcessor& proc, TaskId id, bool serialize, std::chrono::seconds timeout,
           const std::string& what) {
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
      throw InputError(what + " failed: " + why);
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
  auto src = buffer_of(input.size() / esize, dtype, "the input");
  if (!input.empty()) std::memcpy(src->data(), input.data(), input.size());
  auto dst = buffer_of(serialized_layout_desc(src->layout(), *proc).total_bytes(), DType::kUInt8,
                       "the encoded output");
  TaskId id = proc->submit_serialize({src}, {dst}, {key});
  await(*proc, id, /*serialize=*/true, timeout, "encode");
  proc->close();
  write_stdout(dst->bytes());  // narrowed to the bytes written
  return 0;
}

// How a frame's length follows its element count: per_element x count + fixed bytes.
struct FrameLength {
  std::uint64_t per_element = 0;
  std::uint64_t fixed = 0;

  std::uint64_t of(std::uint64_t count) const { return per_element * count + fixed; }
};

// The frame length of `proc` for elements of `dtype`, learnt by encoding zero-filled probes of
// 1, 2 and 3 elements (see the header comment); nullopt when the three lengths do not grow by the
// same positive number of bytes per element, or when a fourth probe of 67 varied elements does
// not have the length they predict (a compressing serde: its length follows the content).
std::optional<FrameLength> learn_frame_length(SerdeProcessor& proc, DType dtype,
                                              const ObjectKey& key, std::chrono::seconds timeout) {
  constexpr std::size_t kVariedProbe = 67;
  std::uint64_t length[5] = {0, 0, 0, 0, 0};
  for (std::size_t i = 1; i <= 4; ++i) {
    const std::size_t n = i <= 3 ? i : kVariedProbe;
    auto src = buffer_of(n, dtype, "a probe");
    std::memset(src->data(), 0, src->size());
    if (i == 4) {
      for (std::size_t b = 0; b < src->size(); ++b)
        src->data()[b] = std::byte((b * 37 + 11) & 0xff);
    }
    auto dst = MemoryObj::allocate(serialized_layout_desc(src->layout(), proc));
    await(proc, proc.submit_serialize({src}, {dst}, {key}), /*serialize=*/true, timeout,
          "decode (encoding a probe of " + std::to_string(n) +
              " element(s) to learn the frame length)");
    length[i] = dst->size();  // narrowed to the bytes written
  }
  const std::uint64_t per = length[2] - length[1];
  if (length[2] <= length[1] || length[3] - length[2] != per || length[1] < per) {
    return std::nullopt;
  }
  const FrameLength rule{per, length[1] - per};
  if (length[4] != rule.of(kVariedProbe)) return std::nullopt;
  return rule;
}

std::string elements(std::uint64_t count, DType dtype) {
  return std::to_string(count) + " " + std::string(dtype_name(dtype)) + " element" +
         (count == 1 ? "" : "s");
}

int run_decode(const std::string& config_text, const std::string& dtype_text,
               std::optional<std::uint64_t> count, const ObjectKey& key,
               std::chrono::seconds timeout) {
  const DType dtype = dtype_from_name(dtype_text);
  const std::vector<std::byte> input = read_stdin();
  SerdeProcessorPtr proc = make_processor(config_text);
  const std::uint64_t n = input.size();
  const std::optional<FrameLength> frame = learn_frame_length(*proc, dtype, key, timeout);
  std::optional<std::uint64_t> derived;
  if (frame && n >= frame->fixed && (n - frame->fixed) % frame->per_element == 0) {
    derived = (n - frame->fixed) / frame->per_element;
  }
  const std::string layout_rule = frame ? "a frame of c " + std::string(dtype_name(dtype)) +
                                              " elements is " + std::to_string(frame->per_element) +
                                              " x c + " + std::to_string(frame->fixed) + " bytes"
                                        : "";
  if (count && frame && derived != count) {
    throw InputError(
        "--count " + std::to_string(*count) + " disagrees with the input: a frame of " +
        elements(*count, dtype) + " is " + std::to_string(frame->of(*count)) +
        " bytes, the input has " + std::to_string(n) +
        (derived ? " (a frame of " + elements(*derived, dtype) + ")"
                 : " (" + layout_rule + ": no count gives " + std::to_string(n) + ")") +
        "; leave --count out to take the count from the input");
  }
  if (!count && !frame) {
    throw InputError(
        "cannot take the element count from the input's length: this serde's frame length "
        "does not grow by a fixed number of bytes per element; give --count");
  }
  if (!count && !derived) {
    throw InputError("the input has " + std::to_string(n) +
                     " bytes, which is no whole frame: " + layout_rule +
                     (n < frame->fixed ? ", at least " + std::to_string(frame->fixed)
                                       : ", and no count gives " + std::to_string(n)));
  }
  const std::uint64_t elements_out = count ? *count : *derived;
  auto src = buffer_of(input.size(), DType::kUInt8, "the input");
  if (!input.empty()) std::memcpy(src->data(), input.data(), input.size());
  auto dst = buffer_of(elements_out, dtype, "the decoded output");
  TaskId id = proc->submit_deserialize({src}, {dst}, {key});
  await(*proc, id, /*serialize=*/false, timeout, "decode");
  proc->close();
  write_stdout(dst->bytes());
  return 0;
}

int run_lmcr_verify(std::uint64_t max_bytes) {
  const std::vector<std::byte> record = read_stdin();
  LmcrRecordInfo info;
  try {
    info = lmcr_validate_record(record);
    if (info.uncompressed_size > max_bytes) {
      throw InputError("lmcr verify: the record holds " + std::to_string(info.uncompressed_size) +
                       " bytes uncompressed, more than --max-bytes " + std::to_string(max_bytes));
    }
    std::vector<std::byte> out(static_cast<std::size_t>(info.uncompressed_size));
    lmcr_decode(record, out);
  } catch (const LmcrError& e) {
    throw InputError(std::string("lmcr verify: ") + e.what());
  }
  std::cout << "LMCR v1 record: valid\n"
            << "  framing: " << (info.framing == LmcrFraming::kGzip ? "gzip" : "raw") << '\n'
            << "  chunks: " << info.chunks.size() << '\n'
            << "  record size: " << info.record_size << " bytes\n"
            << "  uncompressed size: " << info.uncompressed_size << " bytes\n";
  std::cout.flush();
  return std::cout ? 0 : kExitFailure;
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
  std::uint64_t count = 0;
  int timeout_s = 300;
  std::string chunk_hash_hex = "0000000000000000";
  std::string cache_salt;

  auto add_common = [&](CLI::App* sub, const char* dtype_help) {
    sub->add_option("--config", config_text,
                    R"(serde config as JSON, e.g. '{"type":"fp8","fp8_dtype":"float8_e5m2"}')")
        ->required();
    sub->add_option("--dtype", dtype_text, dtype_help)->required();
    sub->add_option("--timeout", timeout_s, "seconds to wait for the serde (default 300)")
        ->check(cli::uint_in(1, 86400));
    sub->add_option("--chunk-hash", chunk_hash_hex,
                    "the object key's chunk hash, hex (default 0000000000000000)");
    sub->add_option("--cache-salt", cache_salt, "the object key's cache_salt (default empty)");
  };
  CLI::App* encode = app.add_subcommand("encode", "stdin: raw elements -> stdout: serialized");
  add_common(encode, "element dtype of the input (float32, float16, bfloat16, ...)");
  CLI::App* decode = app.add_subcommand("decode", "stdin: serialized -> stdout: raw elements");
  add_common(decode, "element dtype of the output (float32, float16, bfloat16, ...)");
  CLI::Option* count_opt =
      decode
          ->add_option("--count", count,
                       "elements in the frame (default: taken from the frame's length; if "
                       "given, it must agree with it)")
          ->check(cli::uint_in(0, kMaxCount));
  CLI::App* list = app.add_subcommand("list", "print the registered serde types");
  CLI::App* lmcr = app.add_subcommand("lmcr", "LMCR v1 records (LMCache's compressed format)");
  lmcr->require_subcommand(1);
  CLI::App* lmcr_verify = lmcr->add_subcommand(
      "verify", "stdin: one LMCR v1 record; every check run, every chunk inflated");
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  lmcr_verify
      ->add_option("--max-bytes", max_bytes,
                   "the most uncompressed bytes a record may hold (default 1073741824)")
      ->check(cli::uint_in(1, kMaxCount));

  if (std::optional<int> done = cli::parse_command_line(app, argc, argv)) return *done;

  try {
    if (list->parsed()) return run_list();
    if (lmcr_verify->parsed()) return run_lmcr_verify(max_bytes);
    const std::chrono::seconds timeout(timeout_s);
    const ObjectKey key = key_of(chunk_hash_hex, cache_salt);
    if (encode->parsed()) return run_encode(config_text, dtype_text, key, timeout);
    return run_decode(config_text, dtype_text,
                      count_opt->count() > 0 ? std::optional<std::uint64_t>(count) : std::nullopt,
                      key, timeout);
  } catch (const std::invalid_argument& e) {
    std::cerr << "lmcache-serde: " << e.what() << '\n';
    return kExitRejected;
  } catch (const std::bad_alloc&) {
    throw;  // guarded_main() names it
  } catch (const std::exception& e) {
    std::cerr << "lmcache-serde: error: " << e.what() << '\n';
    return kExitFailure;
  }
}

}  // namespace
}  // namespace lmcache

int main(int argc, char** argv) {
  return lmcache::cli::guarded_main("lmcache-serde", [&] { return lmcache::run(argc, argv); });
}
