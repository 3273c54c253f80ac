// Key derivation (pure) and the header scanner that feeds it (reads files, memoized per process).
#include "cubby/key.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/bytes.hpp"

namespace cubby {
namespace {

// ---------------------------------------------------------------------------------------------
// Encoding.
//
// The key is XXH3-128 over the concatenation of fields, in the order `visit_fields` gives them.
// Every field is encoded as
//     u64 label_size, label bytes, u64 value_size, value bytes          (u64: little-endian)
// A list is a count field ("options", "name_expressions", "headers") followed by one field per
// element, so neither moving bytes between neighbouring fields nor splitting one element in two
// can produce the same byte stream. Values:
//   bytes field   the bytes themselves
//   number field  u64 (value_size is 8)
//   header field  u64 include_size, include, u8 resolved, u64 path_size, path, 16-byte hash
// Any change to this layout must change tests/golden/key_v1.txt.
// ---------------------------------------------------------------------------------------------

enum class FieldKind { bytes, number, header };

constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);

struct Field {
  std::string_view label;  // the label that is hashed (fixed per kind of field, no index)
  FieldKind kind = FieldKind::bytes;
  std::string_view bytes;
  std::uint64_t number = 0;
  const HeaderDigest* header = nullptr;
  std::size_t index = kNoIndex;  // position in its list, for `explain_key` labels only
};

Field bytes_field(std::string_view label, std::string_view value, std::size_t index = kNoIndex) {
  Field field;
  field.label = label;
  field.kind = FieldKind::bytes;
  field.bytes = value;
  field.index = index;
  return field;
}

Field number_field(std::string_view label, std::uint64_t value) {
  Field field;
  field.label = label;
  field.kind = FieldKind::number;
  field.number = value;
  return field;
}

Field header_field(const HeaderDigest& header, std::size_t index) {
  Field field;
  field.label = "header";
  field.kind = FieldKind::header;
  field.header = &header;
  field.index = index;
  return field;
}

// Streams bytes into XXH3-128.
class HashSink {
 public:
  HashSink() {
    XXH3_INITSTATE(&state_);
    XXH3_128bits_reset(&state_);
  }
  void put(const void* data, std::size_t size) { XXH3_128bits_update(&state_, data, size); }
  std::array<std::uint8_t, 16> digest() const {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state_));
    std::array<std::uint8_t, 16> out{};
    std::copy(std::begin(canonical.digest), std::end(canonical.digest), out.begin());
    return out;
  }

 private:
  XXH3_state_t state_;
};

// Collects bytes into a string (one field's encoding, for `explain_key`).
class StringSink {
 public:
  void put(const void* data, std::size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

template <class Sink>
void put_u64(Sink& sink, std::uint64_t value) {
  char le[8];
  store_le(le, value);
  sink.put(le, sizeof le);
}

template <class Sink>
void put_sized(Sink& sink, std::string_view bytes) {
  put_u64(sink, bytes.size());
  sink.put(bytes.data(), bytes.size());
}

template <class Sink>
void encode(Sink& sink, const Field& field) {
  put_sized(sink, field.label);
  switch (field.kind) {
    case FieldKind::bytes:
      put_sized(sink, field.bytes);
      break;
    case FieldKind::number:
      put_u64(sink, 8);
      put_u64(sink, field.number);
      break;
    case FieldKind::header: {
      const HeaderDigest& h = *field.header;
      put_u64(sink, 8 + h.include.size() + 1 + 8 + h.path.size() + h.content_hash.size());
      put_sized(sink, h.include);
      const std::uint8_t resolved = h.resolved ? 1 : 0;
      sink.put(&resolved, 1);
      put_sized(sink, h.path);
      sink.put(h.content_hash.data(), h.content_hash.size());
      break;
    }
  }
}

// Name expressions sorted and de-duplicated (views into `inputs`).
std::vector<std::string_view> sorted_names(const KeyInputs& inputs) {
  std::vector<std::string_view> names(inputs.name_expressions.begin(),
                                      inputs.name_expressions.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Calls `visit(Field)` for every field of the key, in hashing order. The one place that fixes
// the order: `derive_key` and `explain_key` both go through it.
template <class Visit>
void visit_fields(const KeyInputs& inputs, const std::vector<std::string_view>& names,
                  Visit&& visit) {
  visit(number_field("format_version", inputs.format_version));
  visit(bytes_field("nvrtc_version", inputs.nvrtc_version));
  visit(bytes_field("nvrtc_identity", inputs.nvrtc_identity));
  visit(bytes_field("arch", inputs.arch));
  visit(number_field("options", inputs.options.size()));
  for (std::size_t i = 0; i < inputs.options.size(); ++i) {
    visit(bytes_field("option", inputs.options[i], i));
  }
  visit(bytes_field("source", inputs.source));
  visit(bytes_field("program_name", inputs.program_name));
  visit(number_field("name_expressions", names.size()));
  for (std::size_t i = 0; i < names.size(); ++i) {
    visit(bytes_field("name_expression", names[i], i));
  }
  visit(number_field("headers", inputs.headers.size()));
  for (std::size_t i = 0; i < inputs.headers.size(); ++i) {
    visit(header_field(inputs.headers[i], i));
  }
}

// One-line, ASCII-only rendering of `value`: control and non-ASCII bytes as escapes, cut after
// `limit` input bytes with "..." and the full size appended.
std::string summarize(std::string_view value, std::size_t limit, bool always_size = false) {
  std::string out;
  const std::size_t shown = std::min(value.size(), limit);
  out.reserve(shown + 24);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      append_hex(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < value.size()) {
    out += "...";
  }
  if (shown < value.size() || always_size) {
    out += " [" + std::to_string(value.size()) + " bytes]";
  }
  return out;
}

constexpr std::size_t kSummaryLimit = 60;

std::string explain_label(const Field& field) {
  std::string label(field.label);
  if (field.kind == FieldKind::header) {
    label += "[" + summarize(field.header->include, 200) + "]";
  } else if (field.index != kNoIndex) {
    label += "[" + std::to_string(field.index) + "]";
  }
  return label;
}

std::string explain_summary(const Field& field) {
  switch (field.kind) {
    case FieldKind::number:
      return std::to_string(field.number);
    case FieldKind::bytes:
      return summarize(field.bytes, kSummaryLimit, field.label == "source");
    case FieldKind::header: {
      const HeaderDigest& h = *field.header;
      if (!h.resolved) {
        return "unresolved";
      }
      return summarize(h.path, 400) + " " + to_hex(h.content_hash.data(), 8);
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Header scanning: translation phases 1-3, then directives.
// ---------------------------------------------------------------------------------------------

// Phase 1 (trigraphs, only when `trigraphs`) and phase 2 (line splicing) over `text`. NVRTC 13
// splices a backslash followed directly by LF or CR LF (not by blanks), and replaces trigraphs
// in C++03/11/14 modes only; a lone CR is a blank, not a line end.
std::string splice_lines(std::string_view text, bool trigraphs) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    std::size_t width = 1;
    if (trigraphs && c == '?' && i + 2 < text.size() && text[i + 1] == '?') {
      static constexpr std::string_view kFrom = "=/'()!<>-";
      static constexpr std::string_view kTo = "#\\^[]|{}~";
      const std::size_t at = kFrom.find(text[i + 2]);
      if (at != std::string_view::npos) {
        c = kTo[at];
        width = 3;
      }
    }
    if (c == '\\') {
      const std::size_t next = i + width;
      if (next < text.size() && text[next] == '\n') {
        i = next;
        continue;
      }
      if (next + 1 < text.size() && text[next] == '\r' && text[next + 1] == '\n') {
        i = next + 1;
        continue;
      }
    }
    out += c;
    i += width - 1;
  }
  return out;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

// Phase 3 and directive recognition over spliced text (see `list_includes`).
class IncludeLexer {
 public:
  IncludeLexer(std::string_view text, IncludeList& out) : t_(text), out_(out) {}

  void run() {
    bool line_start = true;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\n') {
        line_start = true;
        ++i_;
      } else if (is_blank(c)) {
        ++i_;
      } else if (skip_comment()) {
        // a comment is one blank: a directive may follow it on its last line
      } else if (line_start && (c == '#' || (c == '%' && at(i_ + 1) == ':'))) {
        i_ += c == '#' ? 1 : 2;
        line_start = false;
        directive();
      } else {
        line_start = false;
        token();
      }
    }
  }

 private:
  char at(std::size_t i) const { return i < t_.size() ? t_[i] : '\0'; }

  // Skips a comment at i_ (a block comment may span lines: it is one blank); false if none.
  bool skip_comment() {
    if (at(i_) != '/') return false;
    if (at(i_ + 1) == '/') {
      const std::size_t end = t_.find('\n', i_);
      i_ = end == std::string_view::npos ? t_.size() : end;
      return true;
    }
    if (at(i_ + 1) == '*') {
      const std::size_t end = t_.find("*/", i_ + 2);
      i_ = end == std::string_view::npos ? t_.size() : end + 2;
      return true;
    }
    return false;
  }

  // Skips blanks and comments without leaving the line (comments may span lines).
  void skip_blanks() {
    while (i_ < t_.size()) {
      if (is_blank(t_[i_])) {
        ++i_;
      } else if (!skip_comment()) {
        return;
      }
    }
  }

  std::string_view identifier() {
    const std::size_t start = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    return t_.substr(start, i_ - start);
  }

  // A header name "x" or <x> closed on its line at i_: appended to names, true. Otherwise false
  // and i_ unchanged.
  bool header_name() {
    const char open = at(i_);
    const char close = open == '"' ? '"' : open == '<' ? '>' : '\0';
    if (close == '\0') return false;
    std::size_t stop = i_ + 1;
    while (stop < t_.size() && t_[stop] != close && t_[stop] != '\n') ++stop;
    if (stop >= t_.size() || t_[stop] != close) return false;
    if (stop > i_ + 1) out_.names.emplace_back(t_.substr(i_ + 1, stop - i_ - 1));
    i_ = stop + 1;
    return true;
  }

  // The rest of the line from i_ (for messages), trimmed and shortened.
  std::string rest_of_line() const {
    std::size_t end = t_.find('\n', i_);
    if (end == std::string_view::npos) end = t_.size();
    std::string_view rest = t_.substr(i_, std::min<std::size_t>(end - i_, 120));
    while (!rest.empty() && is_blank(rest.back())) rest.remove_suffix(1);
    return std::string(rest);
  }

  // After '#' (or "%:"): an include directive's header name, or an unresolvable operand.
  void directive() {
    if (at(i_) == '#' || (at(i_) == '%' && at(i_ + 1) == ':')) return;  // "##": not a directive
    skip_blanks();
    const std::string_view keyword = identifier();
    if (keyword != "include" && keyword != "include_next") return;
    skip_blanks();
    if (i_ >= t_.size() || t_[i_] == '\n' || header_name()) return;
    out_.unresolvable.push_back("#" + std::string(keyword) + " " + rest_of_line());
  }

  // `__has_include ( "x" )`: the name counts as an include (its existence changes the program).
  void has_include(std::string_view keyword) {
    skip_blanks();
    if (at(i_) != '(') return;
    ++i_;
    skip_blanks();
    if (header_name()) return;
    if (at(i_) == ')' || at(i_) == '\n' || i_ >= t_.size()) return;
    out_.unresolvable.push_back(std::string(keyword) + "(" + rest_of_line());
  }

  // One token at i_ that is not a directive start: literals are skipped whole, so that "/*" or
  // "//" inside them starts no comment.
  void token() {
    const char c = t_[i_];
    if (c == '"' || c == '\'') {
      skip_quoted(c);
    } else if (is_ident_start(c)) {
      const std::string_view word = identifier();
      if (at(i_) == '"' &&
          (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
        skip_raw_string();
      } else if (word == "__has_include" || word == "__has_include_next") {
        has_include(word);
      }
    } else if ((c >= '0' && c <= '9') || (c == '.' && at(i_ + 1) >= '0' && at(i_ + 1) <= '9')) {
      skip_number();
    } else {
      ++i_;
    }
  }

  // A string or character literal; an unterminated one ends at the end of the line.
  void skip_quoted(char quote) {
    ++i_;
    while (i_ < t_.size() && t_[i_] != '\n') {
      if (t_[i_] == '\\') {
        i_ += 2;
        continue;
      }
      if (t_[i_++] == quote) return;
    }
    i_ = std::min(i_, t_.size());
  }

  // R"delim( ... )delim" at the opening quote; an unterminated one runs to the end.
  void skip_raw_string() {
    const std::size_t open = t_.find('(', i_ + 1);
    const std::size_t line_end = t_.find('\n', i_ + 1);
    if (open == std::string_view::npos || open > line_end || open - i_ - 1 > 16) {
      ++i_;  // not a raw string after all: the quote starts an ordinary string
      skip_quoted('"');
      return;
    }
    std::string end = ")";
    end += t_.substr(i_ + 1, open - i_ - 1);
    end += '"';
    const std::size_t close = t_.find(end, open + 1);
    i_ = close == std::string_view::npos ? t_.size() : close + end.size();
  }

  // A pp-number (digit separators and exponent signs included).
  void skip_number() {
    ++i_;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      const char before = t_[i_ - 1];
      const bool exponent_sign = (c == '+' || c == '-') &&
                                 (before == 'e' || before == 'E' || before == 'p' || before == 'P');
      if (c == '\'' && is_ident_char(at(i_ + 1))) {
        i_ += 2;
      } else if (exponent_sign || is_ident_char(c) || c == '.') {
        ++i_;
      } else {
        break;
      }
    }
  }

  std::string_view t_;
  std::size_t i_ = 0;
  IncludeList& out_;
};

void lex_includes(std::string_view text, bool trigraphs, IncludeList& out) {
  const std::string spliced = splice_lines(text, trigraphs);
  IncludeLexer(spliced, out).run();
}

}  // namespace

IncludeList list_includes(std::string_view text) {
  IncludeList out;
  lex_includes(text, false, out);
  // Trigraphs are replaced in C++03/11/14 modes only: both readings count (a union is safe).
  if (text.find("??") != std::string_view::npos) lex_includes(text, true, out);
  const auto tidy = [](std::vector<std::string>& list) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  };
  tidy(out.names);
  tidy(out.unresolvable);
  return out;
}

namespace {

// What one header file contributes: its content hash and its includes as spelled, valid while the
// file's identity (device, inode), size, mtime and ctime (nanoseconds) are unchanged.
// Known limit: a file rewritten in place within one timestamp tick of the file system, with the
// same size, keeps its memoized scan until the process ends (or the file changes again).
struct FileScan {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::array<std::uint8_t, 16> content_hash{};
  std::vector<std::string> includes;      // list_includes(content).names
  std::vector<std::string> unresolvable;  // list_includes(content).unresolvable

  bool matches(const struct stat& st) const {
    return dev == static_cast<std::uint64_t>(st.st_dev) &&
           ino == static_cast<std::uint64_t>(st.st_ino) &&
           size == static_cast<std::uint64_t>(st.st_size) && mtime_ns == mtime_of(st) &&
           ctime_ns == ctime_of(st);
  }
  static std::int64_t mtime_of(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  static std::int64_t ctime_of(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  }
};

bool same_file_state(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         FileScan::mtime_of(a) == FileScan::mtime_of(b) &&
         FileScan::ctime_of(a) == FileScan::ctime_of(b);
}

// The per-process memo. `files`: canonical path -> last scan of that file. `candidates`: a path as
// tried (folder + include) -> the canonical path it resolved to and that file's scan, so a warm
// lookup costs one stat. Both are valid while `FileScan::matches` the stat of the path tried; the
// file identity in it (device, inode) ties a candidate to the file `realpath` found. Known limit:
// a hard link reached through a retargeted symlink keeps its earlier canonical path (the content
// hash is still right). Entries are immutable once published.
struct Resolved {
  std::string canonical;
  std::shared_ptr<const FileScan> scan;
};

struct Memo {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const FileScan>> files;
  std::unordered_map<std::string, Resolved> candidates;
};

Memo& memo() {
  static Memo* instance = new Memo();  // never destroyed: usable from threads still running at exit
  return *instance;
}

// Reads and scans `canonical`. `stable` tells whether the file did not change while it was read
// (only then may the scan be memoized). On a read failure the scan has a zero hash and no
// includes and is not stable (a later call retries).
std::shared_ptr<const FileScan> read_scan(const std::string& canonical, bool& stable) {
  auto scan = std::make_shared<FileScan>();
  stable = false;
  const int fd = ::open(canonical.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return scan;
  }
  struct stat before {};
  if (::fstat(fd, &before) != 0) {
    ::close(fd);
    return scan;
  }
  std::string text;
  text.resize(static_cast<std::size_t>(before.st_size > 0 ? before.st_size : 0) + 1);
  std::size_t used = 0;
  bool ok = true;
  for (;;) {
    if (used == text.size()) {
      text.resize(text.size() * 2);
    }
    const ssize_t got = ::read(fd, text.data() + used, text.size() - used);
    if (got == 0) {
      break;
    }
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      ok = false;
      break;
    }
    used += static_cast<std::size_t>(got);
  }
  struct stat after {};
  const bool after_ok = ::fstat(fd, &after) == 0;
  ::close(fd);
  if (!ok) {
    return scan;
  }
  text.resize(used);

  scan->dev = static_cast<std::uint64_t>(before.st_dev);
  scan->ino = static_cast<std::uint64_t>(before.st_ino);
  scan->size = static_cast<std::uint64_t>(before.st_size);
  scan->mtime_ns = FileScan::mtime_of(before);
  scan->ctime_ns = FileScan::ctime_of(before);
  scan->content_hash = hash128(text);
  IncludeList list = list_includes(text);
  scan->includes = std::move(list.names);
  scan->unresolvable = std::move(list.unresolvable);
  stable = after_ok && same_file_state(before, after) &&
           used == static_cast<std::uint64_t>(before.st_size);
  return scan;
}

// The canonical path and scan of the regular file at `candidate`, whose stat is `st`; false if
// its canonical path cannot be found (it vanished meanwhile).
bool resolve_file(const std::string& candidate, const struct stat& st, Resolved& out) {
  Memo& m = memo();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto it = m.candidates.find(candidate);
    if (it != m.candidates.end() && it->second.scan->matches(st)) {
      out = it->second;
      return true;
    }
  }
  char real[PATH_MAX];
  if (::realpath(candidate.c_str(), real) == nullptr) {
    return false;
  }
  out.canonical = real;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto it = m.files.find(out.canonical);
    if (it != m.files.end() && it->second->matches(st)) {
      out.scan = it->second;
      m.candidates[candidate] = out;
      return true;
    }
  }
  bool stable = false;
  out.scan = read_scan(out.canonical, stable);
  if (stable && out.scan->matches(st)) {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.files[out.canonical] = out.scan;
    m.candidates[candidate] = out;
  }
  return true;
}

std::string parent_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return ".";
  }
  if (slash == 0) {
    return "/";
  }
  return std::string(path.substr(0, slash));
}

// Absolute form of a search folder: relative folders are taken from the working folder, as NVRTC
// (which opens them relative to it) does. Trailing slashes are dropped ("/" stays "/").
std::string absolute_dir(const std::filesystem::path& dir, std::string& cwd) {
  std::string text = dir.string();
  if (text.empty() || text.front() != '/') {
    if (cwd.empty()) {
      std::error_code ec;
      cwd = std::filesystem::current_path(ec).string();
      if (ec || cwd.empty()) {
        cwd = "/";
      }
    }
    text = text.empty() ? cwd : (cwd.back() == '/' ? cwd : cwd + "/") + text;
  }
  while (text.size() > 1 && text.back() == '/') {
    text.pop_back();
  }
  return text;
}

class Scanner {
 public:
  explicit Scanner(std::vector<std::string> search_dirs) : search_dirs_(std::move(search_dirs)) {}

  // Resolves every include in `includes`, seen from a file whose own folders are `own_dirs`,
  // records a digest for each existing candidate (or one unresolved digest) and recurses.
  template <class Includes>
  void scan(const Includes& includes, const std::vector<std::string>& own_dirs) {
    for (const auto& include : includes) {
      resolve(std::string_view(include), own_dirs);
    }
  }

  // Resolves the pre-included files: opened from the working folder first, then searched.
  void scan_pre_includes(const std::vector<std::string>& files, const std::string& cwd) {
    scan(files, std::vector<std::string>{cwd});
  }

  // Records directives that name no literal header, prefixed with where they are.
  void add_unresolvable(const std::string& where, const std::vector<std::string>& directives) {
    for (const std::string& directive : directives) unresolvable_.push_back(where + directive);
  }

  HeaderScan take() && {
    std::sort(out_.begin(), out_.end(), [](const HeaderDigest& a, const HeaderDigest& b) {
      if (a.include != b.include) {
        return a.include < b.include;
      }
      if (a.path != b.path) {
        return a.path < b.path;
      }
      if (a.resolved != b.resolved) {
        return a.resolved < b.resolved;
      }
      return a.content_hash < b.content_hash;
    });
    out_.erase(std::unique(out_.begin(), out_.end()), out_.end());
    std::sort(unresolvable_.begin(), unresolvable_.end());
    unresolvable_.erase(std::unique(unresolvable_.begin(), unresolvable_.end()),
                        unresolvable_.end());
    HeaderScan result;
    result.headers = std::move(out_);
    result.unresolvable = std::move(unresolvable_);
    return result;
  }

 private:
  void resolve(std::string_view include, const std::vector<std::string>& own_dirs) {
    bool any = false;
    if (include.empty() || include.find('\0') != std::string_view::npos) {
      // No file can have this name (NVRTC cannot open it either).
    } else if (include.front() == '/') {
      any = try_candidate(include, std::string(include));
    } else {
      // Every candidate folder, own folders first, each tried once.
      std::vector<const std::string*> dirs;
      dirs.reserve(own_dirs.size() + search_dirs_.size());
      const auto add = [&](const std::string& dir) {
        for (const std::string* seen : dirs) {
          if (*seen == dir) {
            return;
          }
        }
        dirs.push_back(&dir);
      };
      for (const std::string& dir : own_dirs) {
        add(dir);
      }
      for (const std::string& dir : search_dirs_) {
        add(dir);
      }
      for (const std::string* dir : dirs) {
        std::string candidate;
        candidate.reserve(dir->size() + 1 + include.size());
        candidate += *dir;
        if (candidate.back() != '/') {
          candidate += '/';
        }
        candidate += include;
        any = try_candidate(include, candidate) || any;
      }
    }
    if (!any) {
      HeaderDigest digest;
      digest.include = std::string(include);
      out_.push_back(std::move(digest));
    }
  }

  // Records `candidate` if it is an existing regular file; returns whether it was.
  bool try_candidate(std::string_view include, const std::string& candidate) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return false;
    }
    Resolved file;
    if (!resolve_file(candidate, st, file)) {
      return false;
    }

    HeaderDigest digest;
    digest.include = std::string(include);
    digest.resolved = true;
    digest.content_hash = file.scan->content_hash;
    // Each file's includes are resolved once per call (this also breaks include cycles), from the
    // folder it was reached through and the folder it really lives in. A file reached again
    // through another symlinked folder is not rescanned from that folder.
    const bool first_visit =
        (!file.scan->includes.empty() || !file.scan->unresolvable.empty()) &&
        visited_
            .insert({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)})
            .second;
    std::vector<std::string> own_dirs;
    if (first_visit) {
      own_dirs.push_back(parent_of(candidate));
      std::string real_parent = parent_of(file.canonical);
      if (real_parent != own_dirs.front()) {
        own_dirs.push_back(std::move(real_parent));
      }
    }
    if (first_visit) add_unresolvable(file.canonical + ": ", file.scan->unresolvable);
    digest.path = std::move(file.canonical);
    out_.push_back(std::move(digest));
    if (first_visit) {
      scan(file.scan->includes, own_dirs);
    }
    return true;
  }

  std::vector<std::string> search_dirs_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> visited_;  // (device, inode)
  std::vector<HeaderDigest> out_;
  std::vector<std::string> unresolvable_;
};

}  // namespace

std::string Key::hex() const { return to_hex(bytes.data(), bytes.size()); }

Result<Key> Key::parse(std::string_view hex) {
  const auto shown = [&] { return summarize(hex, 80); };
  if (hex.size() != 32) {
    return fail(Errc::invalid_argument, "invalid key \"", shown(),
                "\": expected 32 hex digits, got ", std::to_string(hex.size()),
                " characters; copy the key from `cubby ls` or `cubby compile --json`");
  }
  Key key;
  if (const std::size_t bad = from_hex(hex, key.bytes.data()); bad != std::string_view::npos) {
    return fail(Errc::invalid_argument, "invalid key \"", shown(), "\": character ",
                std::to_string(bad + 1),
                " is not a hex digit (0-9, a-f, A-F); copy the key from `cubby ls` or "
                "`cubby compile --json`");
  }
  return key;
}

Key derive_key(const KeyInputs& inputs) {
  const std::vector<std::string_view> names = sorted_names(inputs);
  HashSink sink;
  visit_fields(inputs, names, [&](const Field& field) { encode(sink, field); });
  Key key;
  key.bytes = sink.digest();
  return key;
}

std::vector<KeyField> explain_key(const KeyInputs& inputs) {
  const std::vector<std::string_view> names = sorted_names(inputs);
  std::vector<KeyField> fields;
  visit_fields(inputs, names, [&](const Field& field) {
    StringSink sink;
    encode(sink, field);
    const auto hash = hash128(sink.bytes());
    fields.push_back(
        KeyField{explain_label(field), explain_summary(field), to_hex(hash.data(), hash.size())});
  });
  return fields;
}

namespace {

// `text` with `base` at `at` replaced by the marker when a path under `base` starts there.
bool replace_base_at(std::string& text, std::size_t at, std::string_view base) {
  if (text.compare(at, base.size(), base) != 0) return false;
  const std::size_t end = at + base.size();
  if (end != text.size() && text[end] != '/') return false;
  text.replace(at, base.size(), kBaseDirMarker);
  return true;
}

}  // namespace

void relativize_paths(KeyInputs& inputs, const std::filesystem::path& base_dir) {
  std::string base = base_dir.lexically_normal().string();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base.empty() || base == "/" || base.front() != '/') return;  // "/" would match everything
  for (std::string& option : inputs.options) {
    if (replace_base_at(option, 0, base)) continue;
    if (option.starts_with("-I") && replace_base_at(option, 2, base)) continue;
    if (const auto equals = option.find('='); equals != std::string::npos) {
      replace_base_at(option, equals + 1, base);
    }
  }
  replace_base_at(inputs.program_name, 0, base);
  for (HeaderDigest& header : inputs.headers) replace_base_at(header.path, 0, base);
}

namespace {

// NVRTC options whose value may be the next option (`-D X`), besides the include options: their
// value is skipped, never read as an option. Verified against NVRTC 13.0 (nvrtcCompileProgram
// accepts "FLAG VALUE" for each); options that only take "=value" (-std, --time, -pch-dir, ...)
// are not listed. Adding a form is a one-line change.
constexpr std::string_view kSeparateValueOptions[] = {
    "-D",
    "--define-macro",
    "-U",
    "--undefine-macro",
    "-maxrregcount",
    "--maxrregcount",
    "-Xptxas",
    "--ptxas-options",
    "-Ofc",
    "--Ofast-compile",
    "-ftz",
    "--ftz",
    "-dopt",
    "--dopt",
    "-rdc",
    "--relocatable-device-code",
    "-jtd",
    "--jump-table-density",
    "-fmad",
    "--fmad",
    "-prec-div",
    "--prec-div",
    "-prec-sqrt",
    "--prec-sqrt",
    "-modify-stack-limit",
    "--modify-stack-limit",
    "-device-stack-protector",
    "--device-stack-protector",
    "-builtin-move-forward",
    "--builtin-move-forward",
    "-builtin-initializer-list",
    "--builtin-initializer-list",
    "-pch-verbose",
    "--pch-verbose",
    "-pch-messages",
    "--pch-messages",
    "-instantiate-templates-in-pch",
    "--instantiate-templates-in-pch",
    "-split-compile",
    "--split-compile",
    "-arch",
    "--gpu-architecture",
    "-diag-error",
    "--diag-error",
    "-diag-suppress",
    "--diag-suppress",
    "-diag-warn",
    "--diag-warn",
    "-brief-diag",
    "--brief-diagnostics",
    "-Xnvvm",
};

// The include options, each with its spellings (NVRTC 13.0, verified by compiling):
//   include path   -I DIR, -IDIR, -I=DIR, --include-path DIR, --include-path=DIR
//   pre-include    -include F, -include=F, --pre-include F, --pre-include=F
//   flag           -no-source-include, --no-source-include
// ("-includeF", "-include-path=D", "--include=F" are rejected by NVRTC.)
struct IncludeOptionForm {
  std::string_view short_name;
  std::string_view long_name;
  bool glued;  // the short form also takes its value glued on: -IDIR
};
constexpr IncludeOptionForm kIncludePathForm{"-I", "--include-path", true};
constexpr IncludeOptionForm kPreIncludeForm{"-include", "--pre-include", false};

// The value of `form` in options[i] (and options[i + 1] for the separate forms), advancing i
// past what it used; nullopt if options[i] is not `form`.
std::optional<std::string> option_value(const IncludeOptionForm& form,
                                        const std::vector<std::string>& options, std::size_t& i) {
  const std::string_view option = options[i];
  for (const std::string_view name : {form.short_name, form.long_name}) {
    if (option == name) {
      if (i + 1 >= options.size()) return std::nullopt;  // NVRTC rejects it: passed unchanged
      return options[++i];
    }
    if (option.starts_with(name) && option.size() > name.size() && option[name.size()] == '=') {
      return std::string(option.substr(name.size() + 1));
    }
  }
  if (form.glued && option.starts_with(form.short_name) && option.size() > form.short_name.size()) {
    return std::string(option.substr(form.short_name.size()));
  }
  return std::nullopt;
}

}  // namespace

IncludeOptions parse_include_options(const std::vector<std::string>& options) {
  IncludeOptions out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    if (auto dir = option_value(kIncludePathForm, options, i)) {
      out.nvrtc_options.push_back(std::string(kIncludePathForm.long_name) + "=" + *dir);
      out.include_paths.push_back(std::move(*dir));
    } else if (auto file = option_value(kPreIncludeForm, options, i)) {
      out.nvrtc_options.push_back(std::string(kPreIncludeForm.long_name) + "=" + *file);
      out.pre_includes.push_back(std::move(*file));
    } else if (option == "-no-source-include" || option == "--no-source-include") {
      out.no_source_include = true;
      out.nvrtc_options.push_back(option);
    } else {
      out.nvrtc_options.push_back(option);
      const bool takes_next =
          std::find(std::begin(kSeparateValueOptions), std::end(kSeparateValueOptions),
                    std::string_view(option)) != std::end(kSeparateValueOptions);
      if (takes_next && i + 1 < options.size()) out.nvrtc_options.push_back(options[++i]);
    }
  }
  return out;
}

std::vector<std::filesystem::path> include_paths_from_options(
    const std::vector<std::string>& options) {
  const IncludeOptions parsed = parse_include_options(options);
  return {parsed.include_paths.begin(), parsed.include_paths.end()};
}

// Candidate folders, for quoted and angled includes alike: the including file's folder, then
// the program's folder, then the include paths in order (a superset of NVRTC's search, which
// uses the program's folder for the source's quoted includes only). Every existing regular file
// among them is recorded and scanned, so a header that would shadow another (or be shadowed)
// changes the result. Pre-included files are looked up in the working folder first.
HeaderScan scan_includes(std::string_view source, const IncludeSearch& search) {
  std::string cwd;
  std::vector<std::string> search_dirs;
  search_dirs.reserve(search.include_paths.size() + 1);
  if (!search.program_dir.empty()) search_dirs.push_back(absolute_dir(search.program_dir, cwd));
  for (const auto& dir : search.include_paths) search_dirs.push_back(absolute_dir(dir, cwd));

  Scanner scanner(std::move(search_dirs));
  if (!search.pre_includes.empty()) {
    scanner.scan_pre_includes(search.pre_includes, absolute_dir(std::filesystem::path(), cwd));
  }
  IncludeList list = list_includes(source);
  scanner.add_unresolvable("", list.unresolvable);
  scanner.scan(list.names, std::vector<std::string>{});
  return std::move(scanner).take();
}

std::vector<HeaderDigest> scan_headers(std::string_view source,
                                       const std::filesystem::path& source_dir,
                                       const std::vector<std::filesystem::path>& include_paths) {
  IncludeSearch search;
  search.program_dir = source_dir;
  search.include_paths = include_paths;
  return scan_includes(source, search).headers;
}

std::array<std::uint8_t, 16> hash128(std::string_view bytes) {
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = canonical.digest[i];
  }
  return out;
}

}  // namespace cubby
