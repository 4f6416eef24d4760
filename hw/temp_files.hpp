// Temporary files removed when the process is interrupted: every temporary an output goes through
// (hw/io.cpp's write_outputs_atomic, calibrate/plot.cpp's images) is registered here while it exists,
// and a SIGINT/SIGTERM/SIGHUP handler unlinks the registered ones before the process dies, so a
// killed run leaves no partial file behind.
#pragma once

#include <string>
#include <sys/types.h>

namespace fusesim::hw {

/// Install the handlers for SIGINT, SIGTERM and SIGHUP (idempotent). On a signal the handler kills
/// and reaps the registered child process (if any), unlinks every registered temporary, restores the
/// default action and re-raises the signal (the exit status says which signal ended the process).
/// Only async-signal-safe calls (kill, waitpid, unlink, sigaction, raise) are made in the handler.
void install_temp_cleanup_handlers();

/// Register `path` for removal on a signal; returns a slot to pass to forget_temp (-1 when all
/// kRegisteredTemps slots are taken or the path is longer than 4095 bytes: the file is then not
/// protected, which only matters when the process is killed).
int register_temp(const std::string& path);
/// mkstemp(`pattern`, which must end in XXXXXX and is replaced by the name made) and register the
/// file, with SIGINT, SIGTERM and SIGHUP blocked in between, so that a signal never finds the file
/// created but not yet registered. Returns the descriptor (-1 on failure, errno set) and sets `slot`.
int create_registered_temp(std::string& pattern, int& slot);
/// Remove slot `slot` from the registry (after the temporary was renamed or unlinked); -1 is ignored.
void forget_temp(int slot);
/// The child process (e.g. gnuplot writing into a registered temporary) the handler kills and reaps
/// before unlinking; 0 for none.
void set_temp_writer_child(pid_t pid);

inline constexpr int kRegisteredTemps = 256;

/// A registered temporary: unlinked (and unregistered) on destruction unless release()d.
class ScopedTemp {
 public:
  explicit ScopedTemp(std::string path) : path_(std::move(path)), slot_(register_temp(path_)) {}
  /// Adopt a file already registered in `slot` (create_registered_temp).
  ScopedTemp(std::string path, int slot) : path_(std::move(path)), slot_(slot) {}
  ScopedTemp(const ScopedTemp&) = delete;
  ScopedTemp& operator=(const ScopedTemp&) = delete;
  ~ScopedTemp();
  const std::string& path() const { return path_; }
  /// The file was renamed into place: keep it, stop tracking it.
  void release();

 private:
  std::string path_;
  int slot_;
};

}  // namespace fusesim::hw
