// What `rootspan load` shows and hears while a load runs: a one-line progress
// bar on stderr when it is a terminal (bytes done and total, rate, ETA; cut
// to the terminal's width, measured again at every redraw, so a resize
// applies at once), and Ctrl-C, which cancels the load through its progress
// callback so that the library releases every root it made.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "rootspan/weights.h"

namespace rootspan::cli {

class LoadProgress {
 public:
  // Installs the SIGINT handler (until destroyed); `draw`: stderr is a
  // terminal and the output is not JSON.
  explicit LoadProgress(bool draw);
  ~LoadProgress();
  LoadProgress(const LoadProgress &) = delete;
  LoadProgress &operator=(const LoadProgress &) = delete;

  // Points the load's progress callback at this object.
  void attach(rootspan_load_options &options);
  // Erases the bar (the next output starts on a clean line).
  void finish();
  // Ctrl-C was pressed during the load.
  bool interrupted() const;
  // The component the last progress report was about ("" before the first).
  const std::string &component() const { return component_; }
  // When the first component's first bytes were placed (the end of opening
  // and validating); the load's start when no progress was reported.
  std::chrono::steady_clock::time_point first_progress() const { return first_progress_; }
  void start() { start_ = first_progress_ = std::chrono::steady_clock::now(); }

 private:
  static int callback(void *self, const rootspan_load_progress *progress);
  void redraw(const rootspan_load_progress &progress);

  bool draw_;
  bool drawn_ = false;
  bool seen_ = false;
  std::chrono::steady_clock::time_point start_, first_progress_, last_draw_;
  std::uint64_t component_index_ = UINT64_MAX;  // whose name component_ holds
  std::string component_;
};

}  // namespace rootspan::cli
