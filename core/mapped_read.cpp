#include "mapped_read.hpp"

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

namespace rootspan {

namespace {

// The recovery point of the copy running on this thread, or nullptr.
// initial-exec: a signal handler must not be the first to touch a dynamic
// TLS block (that may allocate).
// volatile: the stores around the memcpy must not be merged away (memcpy is a
// builtin the compiler knows does not read it; only the handler does).
__attribute__((tls_model("initial-exec"))) thread_local sigjmp_buf *volatile t_recovery = nullptr;

struct sigaction g_previous {};
std::once_flag g_installed;

void on_sigbus(int signal, siginfo_t *info, void *context) {
  if (sigjmp_buf *recovery = t_recovery; recovery != nullptr) {
    t_recovery = nullptr;
    siglongjmp(*recovery, 1);
  }
  // Not a fault of ours: give it to whoever handled it before.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signal, info, context);
    return;
  }
  if (g_previous.sa_handler == SIG_IGN) return;
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(signal);
    return;
  }
  // The default action: restore it; a fault re-executes and ends the process
  // as it would have, a sent signal is sent again.
  sigaction(SIGBUS, &g_previous, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(signal);
}

void install() {
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, &g_previous);
}

}  // namespace

bool copy_surviving_sigbus(void *destination, const void *source, std::size_t length) noexcept {
  if (length == 0) return true;
  std::call_once(g_installed, install);
  sigjmp_buf recovery;
  if (sigsetjmp(recovery, 1) != 0) return false;  // t_recovery was cleared by the handler
  t_recovery = &recovery;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(destination, source, length);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_recovery = nullptr;
  return true;
}

}  // namespace rootspan
