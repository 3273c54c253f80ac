// Differential tests of the key's header scan (core/src/key/include_scan.cpp) through the whole
// cache: a program compiled through cubby's Cache must always give the PTX that a direct NVRTC
// compile of the same request gives (what CUBBY_DISABLE=1 does), whatever include spelling, option
// form, nesting, guard or dead block it uses, after any edit of any header. A stale header served
// from memory or disk shows up as a PTX difference.
//
// Computed includes are among the generated spellings (macro chains, pasting, #if-selected
// definitions, -D header names, __has_include(MACRO)); an unchanged program must be served from
// the store (a program compiled without it fails the test).
//
// IncludeProperty.GeneratedTreesAfterRandomEdits runs a fixed number of generated cases (seeded,
// so every run is the same); CUBBY_INCLUDE_CASES=N runs N cases instead, CUBBY_INCLUDE_SEED=S
// starts from another seed. It prints the number of cases, edits and compiles it ran.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/nvrtc.hpp"
#include "cuda/compile_hook.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

constexpr const char* kArch = "compute_90";  // PTX: text, equal between identical compiles

Config store_config(const fs::path& dir) {
  Config config;
  config.dir = dir;
  return config;
}

// What a direct compile gives (the payload, or the error text: both sides must fail alike).
std::string direct_ptx(const CompileRequest& request) {
  auto entry = compile_nvrtc(request);
  return entry ? entry->payload : "error: " + entry.error().message;
}

std::string cached_ptx(Cache& cache, const CompileRequest& request) {
  try {
    return cache.compile(request).entry->payload;
  } catch (const Error& error) {
    return "error: " + std::string(error.what());
  }
}

// ---------------------------------------------------------------------------------------------
// One spelling at a time, edited once: the regressions of issue 16.
// ---------------------------------------------------------------------------------------------

struct Spelling {
  const char* name;
  std::string source_prefix;         // before the kernel
  std::vector<std::string> options;  // NVRTC options ("{dir}" is the header's folder)
};

std::vector<Spelling> spellings() {
  return {
      {"plain", "#include \"v.cuh\"\n", {}},
      {"comment before", "/**/#include \"v.cuh\"\n", {}},
      {"splice in directive", "#inc\\\nlude \"v.cuh\"\n", {}},
      {"splice in name", "#include \"v.\\\ncuh\"\n", {}},
      {"digraph", "%:include \"v.cuh\"\n", {}},
      {"comment in directive", "# /*x*/ include \"v.cuh\"\n", {}},
      {"multi-line comment ending on the line", "/* one\n two */ #include \"v.cuh\"\n", {}},
      {"trigraph", "?\?=include \"v.cuh\"\n", {"-std=c++14"}},
      {"macro", "#define H \"v.cuh\"\n#include H\n", {}},
      {"function-like macro", "#define STR(x) #x\n#include STR(v.cuh)\n", {}},
      {"-include=", "", {"-include=v.cuh", "-I{dir}"}},
      {"-include F", "", {"-include", "v.cuh", "-I{dir}"}},
      {"--pre-include=", "", {"--pre-include=v.cuh", "-I{dir}"}},
      {"--pre-include F", "", {"--pre-include", "v.cuh", "-I{dir}"}},
      {"-I=", "#include <v.cuh>\n", {"-I={dir}"}},
      {"-I dir", "#include <v.cuh>\n", {"-I", "{dir}"}},
      {"--include-path dir", "#include <v.cuh>\n", {"--include-path", "{dir}"}},
      // Front-end options NVRTC 13 passes on (issue 23): both spellings, separate values too.
      {"-Xcudafe --preinclude=", "", {"-Xcudafe", "--preinclude={dir}/v.cuh"}},
      {"-Xcudafe=--preinclude=", "", {"-Xcudafe=--preinclude={dir}/v.cuh"}},
      {"-Xcudafe --preinclude F", "", {"-Xcudafe", "--preinclude", "-Xcudafe", "{dir}/v.cuh"}},
      {"-Xcudafe --include_directory=",
       "#include <v.cuh>\n",
       {"-Xcudafe", "--include_directory={dir}"}},
      {"-Xcudafe=--sys_include=", "#include <v.cuh>\n", {"-Xcudafe=--sys_include={dir}"}},
      {"-Xcudafe --sys_include D",
       "#include <v.cuh>\n",
       {"-Xcudafe", "--sys_include", "-Xcudafe", "{dir}"}},
      {"-Xcudafe -ID", "#include <v.cuh>\n", {"-Xcudafe", "-I{dir}"}},
      {"-Xcudafe=-ID", "#include <v.cuh>\n", {"-Xcudafe=-I{dir}"}},
      {"__has_include alias",
       "#define HI __has_include\n#if HI(\"v.cuh\")\n#include \"v.cuh\"\n#endif\n",
       {}},
  };
}

TEST(IncludeStaleness, EverySpellingRecompilesAfterAHeaderEdit) {
  for (const Spelling& spelling : spellings()) {
    SCOPED_TRACE(spelling.name);
    TempDir dir("include-spelling");
    const fs::path headers = dir / "headers";
    write_text(headers / "v.cuh", "constexpr int V = 1001;\n");
    CompileRequest request;
    request.source =
        spelling.source_prefix + "extern \"C\" __global__ void k(int* p) { *p = V; }\n";
    request.arch = kArch;
    bool through_options = false;  // the header's folder is reached through the options only
    for (std::string option : spelling.options) {
      if (const auto at = option.find("{dir}"); at != std::string::npos) {
        option.replace(at, 5, headers.string());
        through_options = true;
      }
      request.options.push_back(option);
    }
    request.program_name = ((through_options ? dir / "prog" : headers) / "k.cu").string();
    Cache cache(store_config(dir / "store"));
    const std::string first = cached_ptx(cache, request);
    ASSERT_NE(first.find("1001"), std::string::npos) << first;
    write_text(headers / "v.cuh", "constexpr int V = 2002; // edited\n");
    const std::string expected = direct_ptx(request);
    ASSERT_NE(expected.find("2002"), std::string::npos) << expected;
    EXPECT_EQ(cached_ptx(cache, request), expected) << "memory tier";
    Cache fresh(store_config(dir / "store"));
    EXPECT_EQ(cached_ptx(fresh, request), expected) << "disk tier";
  }
}

// ---------------------------------------------------------------------------------------------
// Round 3 (issue 23): what NVRTC reads that the scan did not see. Each case compiles through a
// Cache (memory) and a fresh Cache (disk), changes a file, and compares both with a direct compile.
// ---------------------------------------------------------------------------------------------

struct Change {
  const char* name;
  std::string source;                // the program ("{V}": 1001 before, 2002 after the change)
  std::vector<std::string> options;  // "{dir}": the case's folder
  std::string file;                  // created or rewritten, relative to the case's folder
  std::string text;                  // its text after the change
};

std::vector<Change> unseen_changes() {
  const std::string kernel = "extern \"C\" __global__ void k(int* p) { *p = V; }\n";
  const std::string probe_body =
      "constexpr int V = 2002;\n#else\nconstexpr int V = 1001;\n#endif\n" + kernel;
  return {
      {"macro __has_include",
       "#define HI __has_include\n#if HI(\"opt.cuh\")\n" + probe_body,
       {},
       "opt.cuh",
       "#pragma once\n"},
      {"CCCL's _CCCL_HAS_INCLUDE",
       "#include <cuda/std/version>\n#if _CCCL_HAS_INCLUDE(<opt.cuh>)\n" + probe_body,
       {"-I{dir}/inc"},
       "inc/opt.cuh",
       "#pragma once\n"},
      {"a user folder shadowing a name CCCL includes",
       "#include <cuda/std/version>\n#ifdef SHADOWED\n" + probe_body,
       {"-I{dir}/inc"},
       "inc/version",
       "#pragma once\n#define SHADOWED 1\n"},
  };
}

TEST(IncludeStaleness, FilesTheScanCouldNotSeeRecompileAfterAChange) {
  for (const Change& change : unseen_changes()) {
    SCOPED_TRACE(change.name);
    TempDir dir("include-unseen");
    fs::create_directories(dir / "inc");
    CompileRequest request;
    request.source = change.source;
    request.arch = kArch;
    request.program_name = (dir / "k.cu").string();
    for (std::string option : change.options) {
      if (const auto at = option.find("{dir}"); at != std::string::npos) {
        option.replace(at, 5, dir.path().string());
      }
      request.options.push_back(option);
    }
    Cache cache(store_config(dir / "store"));
    const std::string first = cached_ptx(cache, request);
    ASSERT_NE(first.find("1001"), std::string::npos) << first;
    {
      Cache warm(store_config(dir / "store"));
      (void)cached_ptx(warm, request);
    }
    write_text(dir / change.file, change.text);
    const std::string expected = direct_ptx(request);
    ASSERT_NE(expected.find("2002"), std::string::npos) << expected;
    EXPECT_EQ(cached_ptx(cache, request), expected) << "memory tier";
    Cache fresh(store_config(dir / "store"));
    EXPECT_EQ(cached_ptx(fresh, request), expected) << "disk tier";
  }
}

// A header rewritten while NVRTC compiles (between key derivation and NVRTC's read: a test seam):
// the result is NVRTC's, but nothing is stored under the old contents' key.
TEST(IncludeStaleness, AHeaderEditedDuringTheCompileIsNeverServedForTheOldContents) {
  TempDir dir("include-during");
  write_text(dir / "v.cuh", "constexpr int V = 1001;\n");
  CompileRequest request;
  request.source = "#include \"v.cuh\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n";
  request.arch = kArch;
  request.program_name = (dir / "k.cu").string();
  bool edited = false;
  set_compile_hook_for_testing([&](const CompileRequest&) {
    if (!edited) write_text(dir / "v.cuh", "constexpr int V = 2002; // during\n");
    edited = true;
  });
  {
    Cache cache(store_config(dir / "store"));
    EXPECT_EQ(cached_ptx(cache, request), direct_ptx(request));  // NVRTC's result, returned
  }
  set_compile_hook_for_testing({});
  write_text(dir / "v.cuh", "constexpr int V = 1001;\n");
  const std::string expected = direct_ptx(request);
  ASSERT_NE(expected.find("1001"), std::string::npos);
  Cache fresh(store_config(dir / "store"));
  EXPECT_EQ(cached_ptx(fresh, request), expected) << "disk tier";
}

// A toolkit header edited in a copy of the toolkit that CUBBY_NVRTC_LIBRARY points at (the child
// half runs in a fresh process: the library is located once per process).
TEST(IncludeStaleness, ChildCompilesWithTheToolkitCopy) {
  const char* out = std::getenv("CUBBY_TEST_TOOLKIT_OUT");
  if (out == nullptr) GTEST_SKIP() << "runs only as the child of AChangedToolkitHeaderRecompiles";
  CompileRequest request;
  request.source = "#include <tkhdr.h>\nextern \"C\" __global__ void k(int* p) { *p = TK; }\n";
  request.arch = kArch;
  Cache cache(store_config(std::getenv("CUBBY_TEST_TOOLKIT_STORE")));
  const CacheResult result = cache.compile(request);
  write_text(out, std::string(result.hit ? "hit\n" : "compiled\n") + result.entry->payload +
                      "\n=====\n" + direct_ptx(request));
}

TEST(IncludeStaleness, AChangedToolkitHeaderRecompiles) {
  const auto nvrtc = locate_nvrtc();
  if (!nvrtc) GTEST_SKIP() << "no libnvrtc: " << nvrtc.error().message;
  TempDir dir("include-toolkit");
  const fs::path lib = dir / "toolkit" / "lib64";
  fs::create_directories(lib);
  const fs::path real_lib = fs::canonical(nvrtc->path);
  for (const auto& item : fs::directory_iterator(real_lib.parent_path())) {
    const std::string name = item.path().filename().string();
    if (!name.starts_with("libnvrtc") || !item.is_regular_file() || item.is_symlink()) continue;
    std::error_code ec;
    fs::create_hard_link(item.path(), lib / name, ec);  // a copy without the bytes
    if (ec) fs::copy_file(item.path(), lib / name);
  }
  write_text(dir / "toolkit" / "include" / "tkhdr.h", "#define TK 1001\n");
  write_text(dir / "toolkit" / "include" / "nvrtc.h", "\n");  // how the include folder is found
  const auto run_child = [&] {
    const fs::path out = dir / "child.out";
    const pid_t child = ::fork();
    if (child == 0) {
      ::setenv("CUBBY_NVRTC_LIBRARY", (lib / real_lib.filename()).c_str(), 1);
      ::setenv("CUBBY_TEST_TOOLKIT_OUT", out.c_str(), 1);
      ::setenv("CUBBY_TEST_TOOLKIT_STORE", (dir / "store").c_str(), 1);
      ::execl("/proc/self/exe", "test_include_property",
              "--gtest_filter=IncludeStaleness.ChildCompilesWithTheToolkitCopy",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    EXPECT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return read_text(out);
  };
  const auto split = [](const std::string& text) {
    const auto at = text.find("\n=====\n");
    return std::pair{text.substr(0, at), text.substr(at + 7)};
  };
  const auto [first, first_direct] = split(run_child());
  EXPECT_EQ(first, "compiled\n" + first_direct);
  EXPECT_NE(first.find("1001"), std::string::npos) << first;
  EXPECT_EQ(split(run_child()).first, "hit\n" + first_direct);
  write_text(dir / "toolkit" / "include" / "tkhdr.h", "#define TK 2002 // edited\n");
  const auto [after, after_direct] = split(run_child());
  EXPECT_NE(after_direct.find("2002"), std::string::npos) << after_direct;
  EXPECT_EQ(after, "compiled\n" + after_direct);
}

// ---------------------------------------------------------------------------------------------
// CCCL through a folder that is not the toolkit's (CuPy bundles its own under site-packages):
// thrust picks its backend headers by computed includes (`#include
// __THRUST_DEVICE_SYSTEM_TAG_HEADER` over a chain of object-like macros, about 95 of them).
// ---------------------------------------------------------------------------------------------

TEST(ComputedIncludes, ThrustThroughACopyOfCcclIsStoredServedAndRekeyedByAComputedIncludedHeader) {
  const auto nvrtc = locate_nvrtc();
  if (!nvrtc) GTEST_SKIP() << "no libnvrtc: " << nvrtc.error().message;
  const fs::path toolkit_cccl = nvrtc->include_dir / "cccl";
  if (!fs::is_directory(toolkit_cccl / "thrust")) GTEST_SKIP() << "no CCCL at " << toolkit_cccl;
  TempDir dir("cccl-copy");
  const fs::path cccl = dir / "site-packages" / "cccl";
  fs::create_directories(cccl.parent_path());
  fs::copy(toolkit_cccl, cccl, fs::copy_options::recursive);
  CompileRequest request;
  request.program_name = (dir / "prog" / "k.cu").string();
  request.arch = kArch;
  request.options = {"-I" + cccl.string(), "-std=c++17"};
  request.source =
      "#include <thrust/iterator/counting_iterator.h>\n"
      "extern \"C\" __global__ void k(int* p) {\n"
      "  thrust::counting_iterator<int> at(p[0]);\n  p[1] = at[3];\n}\n";
  Cache cache(store_config(dir / "store"));
  const CacheResult first = cache.compile(request);
  EXPECT_FALSE(first.hit);
  EXPECT_TRUE(cache.compile(request).hit) << "compiled without the store";
  Cache fresh(store_config(dir / "store"));  // a new process: from the disk
  EXPECT_TRUE(fresh.compile(request).hit);
  // A header reached only through a computed include, edited: another key.
  const Key before = cache.key_of(request);
  const fs::path policy = cccl / "thrust" / "system" / "cuda" / "detail" / "execution_policy.h";
  ASSERT_TRUE(fs::is_regular_file(policy));
  write_text(policy, read_text(policy) + "\n// edited\n");
  EXPECT_NE(cache.key_of(request), before);
  EXPECT_EQ(cache.compile(request).entry->payload, direct_ptx(request));
}

// ---------------------------------------------------------------------------------------------
// Generated trees.
// ---------------------------------------------------------------------------------------------

// A generated program: headers in the program's folder and two include paths, each defining a
// constant; the source and the headers include each other in random spellings; the kernel writes
// the constants of every live header.
class Case {
 public:
  Case(std::mt19937& random, const fs::path& root) : random_(random), root_(root) {
    const int count = pick(2, 6);
    for (int i = 0; i < count; ++i) {
      Header h;
      h.name = "h" + std::to_string(i) + ".cuh";
      h.folder = pick(0, 2);  // 0: program folder, 1: inc1, 2: inc2
      h.guard = pick(0, 1) == 0 ? Guard::pragma_once : Guard::ifndef;
      h.value = pick(100, 999);
      headers_.push_back(h);
    }
    // A header in a later folder with the name of an earlier one: shadowed (read instead of it
    // only through a quoted include from its own folder). Both get the same #ifndef guard.
    if (pick(0, 2) == 0) {
      const auto index = static_cast<std::size_t>(pick(0, count - 1));
      Header& original = headers_[index];
      if (original.folder < 2) {
        original.guard = Guard::ifndef;
        Header shadow = original;
        shadow.original = index;  // includes what the original includes
        shadow.folder = original.folder + 1;
        shadow.value = pick(100, 999);
        shadow.shadow = true;
        headers_.push_back(shadow);
        ++used_extra_[1];
      }
    }
    // A header only included inside #if 0: dead.
    if (pick(0, 2) == 0) {
      Header dead;
      dead.name = "dead.cuh";
      dead.folder = 1;
      dead.guard = Guard::pragma_once;
      dead.value = pick(100, 999);
      dead.dead = true;
      headers_.push_back(dead);
      ++used_extra_[2];
    }
    // Who includes whom: every live header is reached from the source or an earlier header.
    for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i) {
      const bool from_header = i > 0 && pick(0, 1) == 0;
      if (from_header) {
        std::size_t parent = static_cast<std::size_t>(pick(0, static_cast<int>(i) - 1));
        // A header of the program's folder is found from the source or from its own folder only.
        if (headers_[i].folder == 0 && headers_[parent].folder != 0) parent = kSource;
        edges_.push_back({parent, i, false, {}});
      } else {
        edges_.push_back({kSource, i, false, {}});
      }
    }
    // Pre-include one header of an include path through an option instead (never the program
    // folder's: NVRTC looks pre-includes up in the working folder and the include paths).
    for (Edge& edge : edges_) {
      if (edge.from == kSource && headers_[edge.to].folder != 0 && pick(0, 3) == 0) {
        edge.pre_include = true;
        ++used_extra_[0];
        break;
      }
    }
    // Each directive is spelled once: edits rewrite a header with the same directives.
    for (Edge& edge : edges_) {
      const int from = edge.from == kSource ? 0 : headers_[edge.from].folder;
      edge.text = directive(headers_[edge.to], folder(from));
    }
    for (const Header& h : headers_) {
      if (h.dead) dead_text_ = "#if 0\n" + directive(h, folder(0)) + "#endif\n";
    }
  }

  // Writes every file and returns the request.
  CompileRequest request() {
    for (std::size_t i = 0; i < headers_.size(); ++i) write_header(i);
    CompileRequest r;
    r.program_name = (folder(0) / "k.cu").string();
    r.arch = kArch;
    std::string source;
    for (const Edge& edge : edges_) {
      if (edge.from != kSource) continue;
      if (edge.pre_include) {
        add_pre_include(r.options, headers_[edge.to].name);
      } else {
        source += edge.text;
      }
    }
    source += dead_text_;
    add_include_path(r.options, folder(1));
    add_include_path(r.options, folder(2));
    if (trigraphs_) r.options.push_back("-std=c++14");
    r.options.insert(r.options.end(), defines_.begin(), defines_.end());
    source += "extern \"C\" __global__ void k(int* p) {\n";
    int slot = 0;
    for (const Header& h : headers_) {
      if (h.shadow || h.dead) continue;
      source += "  p[" + std::to_string(slot++) + "] = " + constant(h) + ";\n";
    }
    source += "}\n";
    r.source = source;
    return r;
  }

  // Changes the value of one header (any: live, shadowed or dead) and rewrites it.
  void edit() {
    const std::size_t i = static_cast<std::size_t>(pick(0, static_cast<int>(headers_.size()) - 1));
    headers_[i].value = pick(100, 999);
    ++headers_[i]
          .edits;  // the size grows too: see ScanHeaders.MemoNoticesEdits for same-size edits
    write_header(i);
  }

 private:
  enum class Guard { pragma_once, ifndef };
  struct Header {
    std::string name;
    int folder = 0;
    Guard guard = Guard::pragma_once;
    int value = 0;
    int edits = 0;
    bool shadow = false;
    std::size_t original = 0;  // for a shadow: the header it shadows
    bool dead = false;
  };
  struct Edge {
    std::size_t from;  // kSource or a header index
    std::size_t to;
    bool pre_include = false;
    std::string text;  // the directive, spelled
  };
  static constexpr std::size_t kSource = static_cast<std::size_t>(-1);

  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

  fs::path folder(int index) const {
    return root_ / (index == 0 ? "prog" : index == 1 ? "inc1" : "inc2");
  }

  static std::string constant(const Header& h) { return "C_" + h.name.substr(0, h.name.find('.')); }

  // An include of `h` in a random spelling, from a file in `from_folder`.
  std::string directive(const Header& h, const fs::path& from_folder) {
    const bool own_folder = folder(h.folder) == from_folder;
    const bool angled_ok = h.folder != 0 && !own_folder && pick(0, 2) == 0;
    const std::string name = angled_ok ? "<" + h.name + ">" : "\"" + h.name + "\"";
    const std::string macro = "HDR_" + std::to_string(macros_++);
    const int kind = pick(0, kSpellings - 1);
    ++used_[static_cast<std::size_t>(kind)];
    const std::string stem = h.name.substr(0, h.name.find('.'));
    switch (kind) {
      case 0:
        return "/**/#include " + name + "\n";
      case 1:
        return "#inc\\\nlude " + name + "\n";
      case 2:
        return "%:include " + name + "\n";
      case 3:
        return "# /*x*/ include " + name + "\n";
      case 4:
        return "/* a\n b */ #include " + name + "\n";
      case 5:
        return "#define " + macro + " " + name + "\n#include " + macro + "\n";
      case 6:
        trigraphs_ = true;
        return "?\?=include " + name + "\n";
      case 7:
        return "# /* spans\n lines */ include " + name + " // trailing\n";
      case 8:
        return "#include \"" + h.name.substr(0, 2) + "\\\n" + h.name.substr(2) + "\"\n";
      case 11:  // a chain of object-like macros
        return "#define " + macro + "_A " + macro + "_B\n#define " + macro + "_B " + name +
               "\n#include " + macro + "_A\n";
      case 12:  // pasting and stringizing through function-like macros, quoted
        return "#define " + macro + "_CAT(a, b) a##b\n#define " + macro + "_STR2(x) #x\n" +
               "#define " + macro + "_STR(x) " + macro + "_STR2(x)\n#include " + macro + "_STR(" +
               macro + "_CAT(" + stem.substr(0, 1) + ", " + stem.substr(1) + ").cuh)\n";
      case 13: {  // definitions chosen by #if (the other branch names a header nobody has)
        const bool first = pick(0, 1) == 0;
        const std::string other = "\"zz_" + h.name + "\"";
        return "#if " + std::string(first ? "1" : "0") + "\n#define " + macro + " " +
               (first ? name : other) + "\n#else\n#define " + macro + " " + (first ? other : name) +
               "\n#endif\n" +
               (pick(0, 1) == 0 ? ""
                                : "#undef " + macro + "\n#define " + macro + " " + name + "\n") +
               "#include " + macro + "\n";
      }
      case 14:  // a header name defined by a -D option
        defines_.push_back("-D" + macro + "=" + name);
        return "#include " + macro + "\n";
      case 15:  // __has_include of a macro
        return "#define " + macro + " " + name + "\n#if __has_include(" + macro + ")\n#include " +
               macro + "\n#else\n#error no header\n#endif\n";
      default:
        return "#include " + name + "\n";
    }
  }

 public:
  // How often each directive spelling was generated (indexed like the cases of `directive`).
  static constexpr int kSpellings = 16;
  static constexpr const char* kSpellingNames[kSpellings] = {"comment-prefixed",
                                                             "spliced keyword",
                                                             "digraph",
                                                             "comment inside",
                                                             "multi-line comment",
                                                             "macro",
                                                             "trigraph",
                                                             "comment spanning lines inside",
                                                             "spliced name",
                                                             "plain",
                                                             "plain",
                                                             "macro chain",
                                                             "pasted and stringized",
                                                             "#if-selected definition",
                                                             "-D header name",
                                                             "__has_include(MACRO)"};
  static std::array<int, kSpellings>& used() { return used_; }
  // Pre-included headers, shadowed headers, headers included only inside #if 0.
  static std::array<int, 3>& used_extra() { return used_extra_; }

 private:
  void add_include_path(std::vector<std::string>& options, const fs::path& dir) {
    switch (pick(0, 4)) {
      case 0:
        options.push_back("-I");
        options.push_back(dir.string());
        break;
      case 1:
        options.push_back("-I" + dir.string());
        break;
      case 2:
        options.push_back("-I=" + dir.string());
        break;
      case 3:
        options.push_back("--include-path=" + dir.string());
        break;
      default:
        options.push_back("--include-path");
        options.push_back(dir.string());
        break;
    }
  }

  void add_pre_include(std::vector<std::string>& options, const std::string& file) {
    switch (pick(0, 3)) {
      case 0:
        options.push_back("-include=" + file);
        break;
      case 1:
        options.push_back("-include");
        options.push_back(file);
        break;
      case 2:
        options.push_back("--pre-include=" + file);
        break;
      default:
        options.push_back("--pre-include");
        options.push_back(file);
        break;
    }
  }

  void write_header(std::size_t index) {
    const Header& h = headers_[index];
    const std::string guard = "GUARD_" + constant(h);
    std::string text;
    if (h.guard == Guard::pragma_once) {
      text += "#pragma once\n";
    } else {
      text += "#ifndef " + guard + "\n#define " + guard + "\n";
    }
    const std::size_t includer = h.shadow ? h.original : index;
    for (const Edge& edge : edges_) {
      if (edge.from == includer) text += edge.text;
    }
    text += "constexpr int " + constant(h) + " = " + std::to_string(h.value) + ";\n";
    text += "// edit " + std::string(static_cast<std::size_t>(h.edits), '.') + "\n";
    if (h.guard == Guard::ifndef) text += "#endif\n";
    write_text(folder(h.folder) / h.name, text);
  }

  std::mt19937& random_;
  fs::path root_;
  std::vector<Header> headers_;
  std::vector<Edge> edges_;
  static inline std::array<int, kSpellings> used_{};
  std::vector<std::string> defines_;  // -D options the directives need
  static inline std::array<int, 3> used_extra_{};
  std::string dead_text_;
  int macros_ = 0;
  bool trigraphs_ = false;
};

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? fallback : std::atoi(value);
}

TEST(IncludeProperty, GeneratedTreesAfterRandomEdits) {
  const int cases = env_int("CUBBY_INCLUDE_CASES", 40);
  const int edits_per_case = 4;
  const auto seed = static_cast<std::uint32_t>(env_int("CUBBY_INCLUDE_SEED", 16));
  int edits = 0;
  int compiles = 0;
  int hits = 0;
  for (int n = 0; n < cases; ++n) {
    std::mt19937 random(seed + static_cast<std::uint32_t>(n));
    TempDir dir("include-property");
    Case generated(random, dir / "tree");
    const CompileRequest request = generated.request();
    Cache cache(store_config(dir / "store"));
    for (int e = 0; e <= edits_per_case; ++e) {
      if (e > 0) {
        generated.edit();
        ++edits;
      }
      const std::string expected = direct_ptx(request);
      ASSERT_EQ(expected.rfind("error: ", 0), std::string::npos)
          << "case " << n << " (seed " << seed + static_cast<std::uint32_t>(n)
          << ") does not compile:\n"
          << expected << "\nsource:\n"
          << request.source;
      const CacheResult memory = cache.compile(request);
      // Unchanged, the program is served from the store (none is compiled without it: computed
      // includes are keyed).
      ASSERT_TRUE(cache.compile(request).hit)
          << "case " << n << " edit " << e << " compiled without the store?\nsource:\n"
          << request.source;
      Cache fresh(store_config(dir / "store"));  // a new process: memory empty, disk warm
      const CacheResult disk = fresh.compile(request);
      ASSERT_TRUE(disk.hit) << "case " << n << " edit " << e << " (disk)\nsource:\n"
                            << request.source;
      compiles += 1 + (memory.hit ? 0 : 1) + (disk.hit ? 0 : 1);
      hits += (memory.hit ? 1 : 0) + (disk.hit ? 1 : 0);
      ASSERT_EQ(memory.entry->payload, expected)
          << "case " << n << " edit " << e << " (memory or compiled)\nsource:\n"
          << request.source;
      ASSERT_EQ(disk.entry->payload, expected)
          << "case " << n << " edit " << e << " (disk or compiled)\nsource:\n"
          << request.source;
    }
  }
  std::cout << "include property: " << cases << " generated cases, " << edits << " header edits, "
            << compiles << " NVRTC compiles, " << hits << " cache hits compared (seed " << seed
            << ")\n";
  std::cout << "directive spellings generated:";
  for (std::size_t k = 0; k < Case::used().size(); ++k) {
    if (k == 10) continue;  // "plain" twice
    const int count = Case::used()[k] + (k == 9 ? Case::used()[10] : 0);
    std::cout << (k == 0 ? " " : ", ") << Case::kSpellingNames[k] << " " << count;
  }
  std::cout << "; pre-included " << Case::used_extra()[0] << ", shadowed " << Case::used_extra()[1]
            << ", in #if 0 " << Case::used_extra()[2] << "\n";
  RecordProperty("cases", cases);
  RecordProperty("edits", edits);
  EXPECT_GT(hits, 0);  // the cache served something, or nothing was compared against it
}

}  // namespace
}  // namespace cubby
