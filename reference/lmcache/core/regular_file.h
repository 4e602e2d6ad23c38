// File: lmcache/core/regular_file.h
//
// Files the project's programs read or write by a name they were given (a key file, a report,
// a metrics textfile): regular files only. An output is written only where a regular file is
// or where nothing is -- never over a device, a directory, a FIFO or a socket, and never
// through a symbolic link -- and it is written whole or not at all (a temporary file beside it,
// fsync, rename). Every program that writes an output file by name goes through here (the
// rule: docs/decisions.md, "Output files").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lmcache {

// check_output_path()
//
// Checks that `path` may be written as an output file: the name is not empty and does not end
// in '/'; its last component is not a symbolic link and is either absent or a regular file; its
// directory (symbolic links among the directories are followed) exists and is a directory.
// Throws std::invalid_argument whose message starts with the quoted path and says what is
// there ("'/dev/null' is a character device, not a regular file: ..."). Permissions are not
// checked; the write reports them.
void check_output_path(const std::string& path);

// OutputFile
//
// An output file being written: a temporary file beside the named path, renamed over it by
// commit(). For writers that need a file name of their own to write into (Google Benchmark's
// --benchmark_out); write_output_file() is the one-call form. Not thread-safe.
class OutputFile {
 public:
  // Checks `path` (check_output_path(), whose std::invalid_argument it throws) and creates the
  // temporary file "<path>.tmp.<pid>.<n>" (O_EXCL, mode 0644 less the umask). Throws
  // std::system_error naming the temporary file when it cannot be created.
  explicit OutputFile(std::string path);

  // Removes the temporary file unless commit() succeeded.
  ~OutputFile();

  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // The path given, and the temporary file's (which another writer may open and fill before
  // commit()).
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

  // write()
  //
  // Appends `bytes` to the temporary file. Throws std::system_error naming it on a failed write
  // (a full disk), std::logic_error after commit().
  void write(std::string_view bytes);

  // commit()
  //
  // Flushes the temporary file to disk, checks `path` again (check_output_path(): something
  // other than a regular file may have appeared there since) and renames the temporary file
  // over it, so that a reader sees the old file or the whole new one. On failure the temporary
  // file is removed, `path` is left as it was, and std::invalid_argument (the check) or
  // std::system_error naming the path and the failing step is thrown. Throws std::logic_error
  // when called twice.
  void commit();

 private:
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// write_output_file()
//
// Writes `content` as the whole of the output file `path` (OutputFile, then commit()). Throws
// what OutputFile's constructor, write() and commit() throw; `path` is then left as it was.
void write_output_file(const std::string& path, std::string_view content);

// read_regular_file()
//
// The whole content of the regular file `path`, at most `max_bytes` bytes. The file is opened
// (following symbolic links) and fstat()ed, so that what is checked is what is read. Throws
// std::invalid_argument whose message starts with the quoted path when the file cannot be
// opened or read (naming the reason), is not a regular file (naming what it is: a directory, a
// character device, ...) or holds more than `max_bytes` bytes.
std::string read_regular_file(const std::string& path, std::size_t max_bytes);

}  // namespace lmcache
