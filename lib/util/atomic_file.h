// Atomic file replacement. Every file manifold installs or rewrites (the binary in /opt/cni/bin, the
// generated CNI config, the kubeconfig and its token/CA copies) is written to a temp file in the
// target directory, fsynced, and renamed over the old one, then the directory is fsynced. A reader
// (the container runtime scanning /etc/cni/net.d, or a runtime executing the old binary) therefore
// sees either the old or the new file, never a partial one, and renaming never hits ETXTBSY. A
// process killed between creating the temp file (`.<name>.tmp-XXXXXX`) and renaming it leaves that
// file behind; remove_stale_temp_files() sweeps such leftovers of one destination.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace manifold::util {

/// Writes `data` to `path` atomically with permissions `mode`. Throws util::IoError naming the path
/// when the directory is not writable or any step fails; the temp file is removed on failure.
void write_file_atomic(const std::string& path, std::string_view data, mode_t mode);

/// Copies the regular file `src` to `dst` atomically with permissions `mode` (streamed, so large
/// binaries are fine). Works while another process holds `dst` open or is executing it. Throws
/// util::IoError naming the path that failed.
void copy_file_atomic(const std::string& src, const std::string& dst, mode_t mode);

/// Removes the temp files that interrupted writes of `path` left next to it (regular files named
/// `.<name>.tmp-XXXXXX`) whose last change is at least `min_age_seconds` old: a younger one may
/// belong to a write in progress. Returns how many it removed. Never throws: what cannot be listed
/// or removed is left for the next sweep.
int remove_stale_temp_files(const std::string& path, std::int64_t min_age_seconds) noexcept;

}  // namespace manifold::util
