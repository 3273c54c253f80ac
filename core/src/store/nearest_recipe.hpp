// Which recorded recipe of a suite a program is nearest to: what `--cubby-require-warm` shows when
// a second run compiles a program its first run never did (CuPy's kernel set can depend on what
// ran before a test in the same worker), or compiles one the suite did record under another key
// (a key that is not stable). Pure: a manifest's recipes in, a finding out.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cubby/nvrtc.hpp"

namespace cubby {

struct NearestRecipe {
  std::string program_name;  // the recorded recipe's
  // The recorded recipe has this very source, options and name expressions: only the key changed
  // (a header, the toolkit, or a key that is not stable between processes).
  bool same_request = false;
  // The same source with other options or name expressions (same_request false).
  bool same_source = false;
  std::size_t line = 0;       // 1-based: the first line where the sources differ (0: they do not)
  std::string recorded_line;  // that line in the recorded source ("" past its end)
  std::string line_now;       // that line in `request`'s source ("" past its end)
};

// The recorded request of `recorded` (a manifest's recipes, request_of each) nearest to `request`:
// one with the same source (same_request when its options and name expressions are the same
// too); else, among those with the same options and name expressions (any, when none has them),
// the one whose source first differs from `request`'s furthest down, then the one nearest in
// length. nullopt when `recorded` is empty. Lines are cut to 200 bytes.
std::optional<NearestRecipe> nearest_recipe(const std::vector<CompileRequest>& recorded,
                                            const CompileRequest& request);

}  // namespace cubby
