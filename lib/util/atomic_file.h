// Atomic file replacement. Every file manifold installs or rewrites (the binary in /opt/cni/bin, the
// generated CNI config, the kubeconfig and its token/CA copies) is written to a temp file in the
// target directory, fsynced, and renamed over the old one, then the directory is fsynced. A reader
// (the container runtime scanning /etc/cni/net.d, or a runtime executing the old binary) therefore
// sees either the old or the new file, never a partial one, and renaming never hits ETXTBSY.
#pragma once

#include <sys/types.h>

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

}  // namespace manifold::util
