// Where the workers' output lines go. On cohortrun's stdout and stderr, each line behind its
// worker's label ("[3] "), for the ranks --console-ranks selects; with --prefix-timestamp, behind
// the time it was read too. With --output-filename DIR, every line also into a file per rank (and
// per round in an elastic job), as horovodrun writes them:
//   static:                DIR/rank.<R>/stdout, DIR/rank.<R>/stderr (R padded as horovodrun)
//   elastic and agents:    DIR/round.<N>/rank.<R>/stdout, .../stderr
//   before a first round:  DIR/worker.<id>/stdout, .../stderr
// DIR is held open from the start; every directory and file below it is made and opened relative
// to it, by its own name, never through a link (base/directory.h, base/safe_write.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/directory.h"
#include "base/fd.h"

namespace cohort::discovery {

struct OutputOptions {
  std::string directory;                 // --output-filename; empty: no files
  bool timestamps = false;               // --prefix-timestamp
  std::optional<std::set<int>> console;  // --console-ranks; none: every worker
  int rank_digits = 1;                   // a static job's ranks are padded to this many digits
};

// Parses --console-ranks: "0", "0,3", "0-3,8". Throws InvalidArgument naming the flag.
std::set<int> parse_rank_list(const std::string& text);

// Whose a stream is: its console label, its rank (none before its first round) and its round
// (none in a static job).
struct OutputSource {
  std::string label;
  std::optional<int> rank;
  std::optional<int> round;
};

class WorkerOutput {
 public:
  // Creates `options.directory` and opens it; throws InvalidArgument naming it when that fails or
  // it is not a directory (a symbolic link, a FIFO, a file, a device).
  explicit WorkerOutput(OutputOptions options);

  // Complete lines (each ends in '\n') read from one of `from`'s streams.
  void write(const OutputSource& from, bool is_stderr, std::string_view lines);

 private:
  void write_file(const OutputSource& from, bool is_stderr, const std::string& text);
  // The directories below DIR that hold `from`'s files.
  std::vector<std::string> subdirectories(const OutputSource& from) const;
  Fd open_file(const std::vector<std::string>& below, const std::string& name) const;

  OutputOptions options_;
  std::optional<files::Directory> directory_;  // DIR, when given
  std::map<std::string, Fd> files_;            // by path, opened on the first line
  bool file_error_reported_ = false;
};

}  // namespace cohort::discovery
