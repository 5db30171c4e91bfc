#include "load_progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>

#include "byte_size.hpp"
#include "terminal_text.hpp"

namespace rootspan::cli {

namespace {

volatile std::sig_atomic_t interrupt_requested = 0;
struct sigaction previous_sigint {};

// The first Ctrl-C asks the load to stop; SA_RESETHAND makes a second one
// end the program at once, as it would without the handler.
void on_sigint(int) { interrupt_requested = 1; }

constexpr auto kRedrawInterval = std::chrono::milliseconds(50);

std::string eta_text(double seconds) {
  if (seconds < 0 || seconds > 359999) return "ETA --:--";
  const auto whole = static_cast<long>(seconds + 0.5);
  char text[32];
  if (whole >= 3600) {
    std::snprintf(text, sizeof text, "ETA %ld:%02ld:%02ld", whole / 3600, whole / 60 % 60, whole % 60);
  } else {
    std::snprintf(text, sizeof text, "ETA %ld:%02ld", whole / 60, whole % 60);
  }
  return text;
}

}  // namespace

LoadProgress::LoadProgress(bool draw) : draw_(draw) {
  interrupt_requested = 0;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a read the signal interrupts goes on; the callback stops the load.
  action.sa_flags = SA_RESTART | SA_RESETHAND;
  sigaction(SIGINT, &action, &previous_sigint);
}

LoadProgress::~LoadProgress() {
  finish();
  sigaction(SIGINT, &previous_sigint, nullptr);
}

void LoadProgress::attach(rootspan_load_options &options) {
  options.progress = &LoadProgress::callback;
  options.progress_context = this;
  start();
}

bool LoadProgress::interrupted() const { return interrupt_requested != 0; }

void LoadProgress::finish() {
  if (drawn_) std::fputs("\r\x1b[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

int LoadProgress::callback(void *self, const rootspan_load_progress *progress) {
  auto &me = *static_cast<LoadProgress *>(self);
  if (!me.seen_) {
    me.seen_ = true;
    me.first_progress_ = std::chrono::steady_clock::now();
  }
  if (progress->component != nullptr && progress->component_index != me.component_index_) {
    me.component_index_ = progress->component_index;  // copied once per component, not per report
    me.component_ = progress->component;
  }
  if (me.draw_) me.redraw(*progress);
  return me.interrupted() ? 1 : 0;
}

void LoadProgress::redraw(const rootspan_load_progress &p) {
  const auto now = std::chrono::steady_clock::now();
  const bool last = p.bytes_done >= p.bytes_total;
  if (drawn_ && !last && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  // One column short of the edge: a terminal that wraps at the last column
  // would otherwise scroll.
  const std::size_t columns = terminal_columns(STDERR_FILENO);
  const std::size_t width = columns > 1 ? columns - 1 : 79;

  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(p.bytes_done) / seconds : 0.0;
  const double fraction = p.bytes_total == 0 ? 1.0 : static_cast<double>(p.bytes_done) / p.bytes_total;
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100));
  std::string stats = std::string(percent) + " " + byte_size(p.bytes_done) + "/" + byte_size(p.bytes_total);
  const std::string speed = byte_size(static_cast<std::uint64_t>(rate)) + "/s";
  const std::string eta = eta_text(rate > 0 ? (p.bytes_total - p.bytes_done) / rate : -1);
  if (display_width(stats) + 2 + speed.size() + 2 + eta.size() <= width) stats += "  " + speed + "  " + eta;

  std::string line;
  const std::size_t stats_width = display_width(stats);
  if (width >= stats_width + 3 + 10) {
    const std::size_t bar_width = std::min<std::size_t>(30, (width - stats_width - 3) / 2);
    const auto filled = static_cast<std::size_t>(fraction * bar_width);
    line = "[" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "] ";
  }
  line += stats;
  const std::size_t used = display_width(line);
  if (p.component != nullptr && width >= used + 2 + 8) {
    line += "  " + elide_name(terminal_safe(p.component), width - used - 2);
  }
  std::fprintf(stderr, "\r%s\x1b[K", fit_width(line, width).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace rootspan::cli
