#include "format/blob.hpp"

#include <chrono>
#include <string>

#include "util/bytes.hpp"
#include "util/hash.hpp"

namespace cubby {
namespace {

constexpr std::string_view kBlobDomain = "cubby blob v1";

void put_field(std::string& out, std::string_view value) {
  put_le(out, static_cast<std::uint64_t>(value.size()));
  out.append(value);
}

}  // namespace

Key blob_key(std::string_view ns, std::string_view name) {
  std::string fields;
  put_field(fields, kBlobDomain);
  put_field(fields, ns);
  put_field(fields, name);
  Key key;
  key.bytes = hash128(fields);
  return key;
}

Entry blob_entry(std::string_view ns, std::string_view name, std::string_view payload,
                 std::uint64_t compile_us) {
  Entry entry;
  entry.kind = PayloadKind::blob;
  entry.compile_us = compile_us;
  entry.options = {"namespace=" + std::string(ns), "name=" + std::string(name)};
  entry.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  entry.payload.assign(payload);
  return entry;
}

bool is_blob_of(const Entry& entry, std::string_view ns, std::string_view name) {
  return entry.kind == PayloadKind::blob && entry.options.size() == 2 &&
         entry.options[0] == "namespace=" + std::string(ns) &&
         entry.options[1] == "name=" + std::string(name);
}

namespace {

// The value of a blob entry's "<prefix>..." option (blob_entry records namespace= and name=).
std::string blob_option(const Entry& entry, std::string_view prefix) {
  if (entry.kind != PayloadKind::blob) return {};
  for (const std::string& option : entry.options) {
    if (option.starts_with(prefix)) return option.substr(prefix.size());
  }
  return {};
}

}  // namespace

std::string entry_namespace(const Entry& entry) {
  return entry.kind == PayloadKind::blob ? blob_option(entry, "namespace=")
                                         : std::string(kProgramsNamespace);
}

std::string blob_name(const Entry& entry) { return blob_option(entry, "name="); }

Result<void> check_namespace(std::string_view ns) {
  if (ns.empty() || ns.size() > 255 ||
      ns.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
          std::string_view::npos) {
    return fail(Errc::invalid_argument, "blob namespace '", std::string(ns),
                "' is not valid; use 1 to 255 characters of letters, digits, '.', '_' or '-'");
  }
  return {};
}

Result<void> check_blob_name(std::string_view ns, std::string_view name) {
  if (auto valid = check_namespace(ns); !valid) return valid;
  if (name.empty()) {
    return fail(Errc::invalid_argument,
                "blob name is empty; pass the name the payload is stored under");
  }
  return {};
}

}  // namespace cubby
