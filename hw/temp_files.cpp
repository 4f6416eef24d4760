#include "hw/temp_files.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace fusesim::hw {
namespace {

// Slot states: 0 free, 1 being written, 2 holds a path the handler may unlink.
struct Slot {
  std::atomic<int> state{0};
  char path[4096];
};
Slot g_slots[kRegisteredTemps];
std::atomic<pid_t> g_child{0};
std::atomic<bool> g_installed{false};

void temp_cleanup_on_signal(int sig) {
  const pid_t child = g_child.load();
  if (child > 0) {
    ::kill(child, SIGKILL);
    int st = 0;
    ::waitpid(child, &st, 0);
  }
  for (auto& s : g_slots)
    if (s.state.load() == 2) ::unlink(s.path);
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
  ::raise(sig);
}

}  // namespace

void install_temp_cleanup_handlers() {
  if (g_installed.exchange(true)) return;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // e.g. nohup: keep ignoring
    struct sigaction sa {};
    sa.sa_handler = temp_cleanup_on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

int register_temp(const std::string& path) {
  if (path.size() >= sizeof(Slot::path)) return -1;
  for (int i = 0; i < kRegisteredTemps; ++i) {
    int expect = 0;
    if (!g_slots[i].state.compare_exchange_strong(expect, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2);
    return i;
  }
  return -1;
}

int create_registered_temp(std::string& pattern, int& slot) {
  install_temp_cleanup_handlers();
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  const int fd = ::mkstemp(pattern.data());
  const int err = errno;
  slot = fd >= 0 ? register_temp(pattern) : -1;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return fd;
}

void forget_temp(int slot) {
  if (slot >= 0 && slot < kRegisteredTemps) g_slots[slot].state.store(0);
}

void set_temp_writer_child(pid_t pid) { g_child.store(pid); }

ScopedTemp::~ScopedTemp() {
  if (path_.empty()) return;
  ::unlink(path_.c_str());
  forget_temp(slot_);
}

void ScopedTemp::release() {
  forget_temp(slot_);
  slot_ = -1;
  path_.clear();
}

}  // namespace fusesim::hw
