// Key derivation: the encoding of KeyInputs as labelled, length-prefixed fields and its hash
// (one visit_fields order for the key and for --explain).
#include "cubby/key.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/bytes.hpp"
#include "util/hash.hpp"

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
// The headers enter the key as one bytes field "headers": the 16-byte headers_digest, XXH3-128
// of the list (its count field and one header field per header) encoded the same way. So a
// process that keys many programs over one header set (CuPy's: ~950 headers) hashes the set once.
// Any change to this layout must change tests/golden/key_v<N>.txt and bump N (v2: toolkit_headers;
// v3: the headers as their digest).
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

// Streams bytes into XXH3-128. The fields arrive as many pieces of a few bytes (lengths, labels,
// 16-byte hashes: ~8 per header); each XXH3 update has a fixed cost, so pieces are gathered into
// a buffer and hashed a buffer at a time (the digest depends on the bytes only, not on how they
// were split).
class HashSink {
 public:
  HashSink() {
    XXH3_INITSTATE(&state_);
    XXH3_128bits_reset(&state_);
  }
  void put(const void* data, std::size_t size) {
    if (used_ + size > buffer_.size()) {
      flush();
      if (size >= buffer_.size()) {
        XXH3_128bits_update(&state_, data, size);
        return;
      }
    }
    std::memcpy(buffer_.data() + used_, data, size);
    used_ += size;
  }
  std::array<std::uint8_t, 16> digest() {
    flush();
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state_));
    std::array<std::uint8_t, 16> out{};
    std::copy(std::begin(canonical.digest), std::end(canonical.digest), out.begin());
    return out;
  }

 private:
  void flush() {
    if (used_ != 0) XXH3_128bits_update(&state_, buffer_.data(), used_);
    used_ = 0;
  }
  XXH3_state_t state_;
  std::array<char, 8192> buffer_;
  std::size_t used_ = 0;
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

// Calls `visit(Field)` for the header list's fields (its count, then each header), in hashing
// order: what headers_digest hashes and explain_key shows one by one.
template <class Visit>
void visit_header_fields(const std::vector<HeaderDigest>& headers, Visit&& visit) {
  visit(number_field("headers", headers.size()));
  for (std::size_t i = 0; i < headers.size(); ++i) visit(header_field(headers[i], i));
}

// Calls `visit(Field)` for every field of the key, in hashing order; `digest`: headers_digest of
// the inputs' headers. The one place that fixes the order: `derive_key` and `explain_key` both go
// through it.
template <class Visit>
void visit_fields(const KeyInputs& inputs, const std::vector<std::string_view>& names,
                  const HeadersDigest& digest, Visit&& visit) {
  visit(number_field("format_version", inputs.format_version));
  visit(bytes_field("nvrtc_version", inputs.nvrtc_version));
  visit(bytes_field("nvrtc_identity", inputs.nvrtc_identity));
  visit(bytes_field("toolkit_headers", inputs.toolkit_headers));
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
  visit(bytes_field("headers",
                    std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size())));
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
    // Appended piece by piece: `"[" + std::string` trips GCC 12's -Wrestrict false positive (GCC
    // bug 105329) in optimised builds.
    label.append("[").append(summarize(field.header->include, 200)).append("]");
  } else if (field.index != kNoIndex) {
    label.append("[").append(std::to_string(field.index)).append("]");
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
        return std::string(kToolkitHeaderSummary);
      }
      return summarize(h.path, 400) + " " + to_hex(h.content_hash.data(), 8);
    }
  }
  return {};
}

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

HeadersDigest headers_digest(const std::vector<HeaderDigest>& headers) {
  HashSink sink;
  visit_header_fields(headers, [&](const Field& field) { encode(sink, field); });
  return sink.digest();
}

Key derive_key(const KeyInputs& inputs) {
  return derive_key(inputs, headers_digest(inputs.headers));
}

Key derive_key(const KeyInputs& inputs, const HeadersDigest& digest) {
  const std::vector<std::string_view> names = sorted_names(inputs);
  HashSink sink;
  visit_fields(inputs, names, digest, [&](const Field& field) { encode(sink, field); });
  Key key;
  key.bytes = sink.digest();
  return key;
}

std::vector<KeyField> explain_key(const KeyInputs& inputs) {
  const std::vector<std::string_view> names = sorted_names(inputs);
  std::vector<KeyField> fields;
  const auto add = [&](const Field& field, std::string summary) {
    StringSink sink;
    encode(sink, field);
    const auto hash = hash128(sink.bytes());
    fields.push_back(
        KeyField{explain_label(field), std::move(summary), to_hex(hash.data(), hash.size())});
  };
  const HeadersDigest digest = headers_digest(inputs.headers);
  visit_fields(inputs, names, digest, [&](const Field& field) {
    add(field, field.label == "headers"
                   ? std::to_string(inputs.headers.size()) + " header(s), digest " +
                         to_hex(digest.data(), digest.size()) + " (below)"
                   : explain_summary(field));
  });
  // What the "headers" digest is made of, field by field (a changed header shows by name).
  visit_header_fields(inputs.headers, [&](const Field& field) {
    if (field.kind == FieldKind::header) add(field, explain_summary(field));
  });
  return fields;
}

std::string format_key_fields(const std::vector<KeyField>& fields) {
  std::size_t width = 0;
  for (const KeyField& field : fields) width = std::max(width, field.label.size());
  width = std::min(width, kKeyDumpLabelWidth);
  std::string text = "key fields (label, hash, value):\n";
  for (const KeyField& field : fields) {
    text += "  ";
    text += field.label;
    if (field.label.size() < width) text.append(width - field.label.size(), ' ');
    text += "  ";
    text += std::string_view(field.hash).substr(0, kKeyDumpHashDigits);
    text += "  ";
    text += field.summary;
    text += '\n';
  }
  return text;
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

}  // namespace cubby
