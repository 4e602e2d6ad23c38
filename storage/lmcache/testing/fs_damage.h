// File: lmcache/testing/fs_damage.h
//
// Damage to an fs object's file, done underneath a connector by the tests of the fs connector
// and adapter (issue 26: damaged storage must never hurt the host): the bytes cut short,
// extended, flipped or swapped for another key's object of the same length, or the file replaced
// by something that is no regular file (a FIFO, a directory, a symbolic link to /dev/zero, a
// socket, a character device), or made unreadable. Each kind carries the words a load's error
// must contain (lmcache/fs/fs_connector.h says which it reports). Works on paths only, so it
// needs nothing of the fs connector.
//
// Thread safety: none needed (free functions over the file system).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lmcache::storage_testing {

enum class FsDamage {
  kTruncated,   // cut to half its length
  kExtended,    // one byte appended
  kFlipped,     // one byte of the payload XOR 0x01
  kSwapped,     // another key's object of the same length copied over it
  kFifo,        // replaced by a FIFO nobody writes to
  kDirectory,   // replaced by an empty directory
  kSymlink,     // replaced by a symbolic link to /dev/zero
  kSocket,      // replaced by a bound (and closed) unix socket
  kCharDevice,  // replaced by a character device (1, 5: /dev/zero's numbers)
  kUnreadable,  // mode 000
};

struct FsDamageInfo {
  FsDamage kind;
  std::string name;    // a gtest parameter name: [A-Za-z0-9_]
  std::string reason;  // words the load's error holds, checksum crc32 or none
  // Detected by the length or the file's type, so also without a checksum (flipped and
  // swapped bytes need checksum crc32).
  bool detected_without_checksum = true;
  // The file is refused before a byte is read: the load's destination stays untouched.
  bool refused_before_reading = true;
};

// fs_damages()
//
// Every kind, in the order of FsDamage.
const std::vector<FsDamageInfo>& fs_damages();

// damage_file()
//
// Does `kind` to `file`, the regular file of a stored object. `donor` is another stored
// object's file of the same length (kSwapped only). Returns "" when done, or why this kind cannot
// be done here: kCharDevice without the right to mknod(2), kUnreadable where permissions bind
// nothing (root). Throws std::runtime_error when the damage fails otherwise (a missing file, a
// donor of another length, a socket path longer than sockaddr_un allows).
std::string damage_file(const std::filesystem::path& file, FsDamage kind,
                        const std::filesystem::path& donor = {});

}  // namespace lmcache::storage_testing
