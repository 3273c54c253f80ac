#include "config/store_config.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "util/file_trust.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

// "1Ei", "1Gi", "64Mi": a cap, a power of 1024 times a whole number, as a setting accepts it.
std::string format_size(std::uint64_t bytes) {
  std::size_t unit = 0;
  while (unit < 6 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) +
         std::string(unit == 0 ? "" : "KMGTPE"[unit - 1] + std::string("i"));
}

// `field` = the size `value` says (parse_size), at most `cap`; "0" gives `zero` (what 0 means for
// this setting). Over the cap is an error naming the cap, never a wrap.
Result<void> apply_size(std::uint64_t& field, std::string_view value, std::uint64_t cap,
                        std::uint64_t zero) {
  auto size = parse_size(value);
  if (!size) return size.error();
  if (*size > cap) {
    return fail(Errc::invalid_argument, "at most ", std::to_string(cap), " bytes (",
                format_size(cap), ") is allowed");
  }
  field = *size == 0 ? zero : *size;
  return {};
}

// `field` = the boolean (1/0, true/false, ...) `value` says.
Result<void> apply_bool(bool& field, std::string_view value) {
  auto on = parse_bool(value);
  if (!on) return on.error();
  field = *on;
  return {};
}

// As in ccache (max_size, -M), a number without a unit is GiB: "5" is 5Gi, "0.5" 512Mi.
Result<void> apply_max_size(Config& config, std::string_view value) {
  const std::string_view number = trim(value);
  const bool bare =
      !number.empty() && number.find_first_not_of("0123456789.") == std::string_view::npos;
  auto applied = apply_size(config.max_size, bare ? std::string(number) + "Gi" : value,
                            kMaxStoreSize, kUnlimitedMaxSize);
  if (!applied && applied.error().code == Errc::invalid_argument &&
      applied.error().message.starts_with("expected")) {
    return fail(Errc::invalid_argument,
                "expected a size such as 500M, 1.5G, 64Mi or a number alone, which is GiB as in "
                "ccache (k, M, G, T: powers of 1000; Ki, Mi, Gi, Ti: powers of 1024; 0: "
                "unlimited)");
  }
  return applied;
}

Result<void> apply_read_only(Config& config, std::string_view value) {
  return apply_bool(config.read_only, value);
}

Result<void> apply_remote(Config& config, std::string_view value) {
  config.remote_url = std::string(value);
  return {};
}

Result<void> apply_remote_token_file(Config& config, std::string_view value) {
  config.remote_token_file = std::filesystem::path(value);
  return {};
}

Result<void> apply_remote_mode(Config& config, std::string_view value) {
  const std::string mode = lower(value);
  if (mode == "read" || mode == "read-only" || mode == "readonly" || mode == "ro") {
    config.remote_read_only = true;
  } else if (mode == "readwrite" || mode == "read-write" || mode == "rw" || mode == "write") {
    config.remote_read_only = false;
  } else {
    return fail(Errc::invalid_argument, "expected read or readwrite");
  }
  return {};
}

Result<void> apply_remote_ttl(Config& config, std::string_view value) {
  auto ttl = parse_duration_s(value);
  if (!ttl) return ttl.error();
  if (*ttl > kMaxRemoteTtlS) {
    return fail(Errc::invalid_argument, "Redis refuses expiries this far away (at most ",
                std::to_string(kMaxRemoteTtlS),
                " seconds); use 0 for remote entries that never expire");
  }
  config.remote_ttl_s = *ttl;
  return {};
}

Result<void> apply_milliseconds(std::uint32_t& field, std::string_view value) {
  auto ms = parse_size(value);
  if (!ms || *ms == 0 || *ms > 3'600'000) {
    return fail(Errc::invalid_argument, "expected milliseconds from 1 to 3600000");
  }
  field = static_cast<std::uint32_t>(*ms);
  return {};
}

Result<void> apply_remote_timeout(Config& config, std::string_view value) {
  return apply_milliseconds(config.remote_timeout_ms, value);
}

Result<void> apply_remote_backoff(Config& config, std::string_view value) {
  return apply_milliseconds(config.remote_backoff_ms, value);
}

Result<void> apply_remote_max_entry(Config& config, std::string_view value) {
  // No entry over kMaxEntryBytes is ever read, so that is both the cap and what 0 (no bound of its
  // own) means.
  return apply_size(config.remote_max_entry, value, kMaxEntryBytes, kMaxEntryBytes);
}

Result<void> apply_remote_compress(Config& config, std::string_view value) {
  return apply_bool(config.remote_compress, value);
}

Result<void> apply_remote_read_ahead(Config& config, std::string_view value) {
  return apply_bool(config.remote_read_ahead, value);
}

Result<void> apply_remote_ca_file(Config& config, std::string_view value) {
  config.remote_ca_file = std::string(value);
  return {};
}

Result<void> apply_remote_cert_file(Config& config, std::string_view value) {
  config.remote_cert_file = std::string(value);
  return {};
}

Result<void> apply_remote_key_file(Config& config, std::string_view value) {
  config.remote_key_file = std::string(value);
  return {};
}

// A `key = value` line of the file, or nothing for a blank line or a comment.
struct FileLine {
  std::string_view key;
  std::string_view value;
};

Result<std::optional<FileLine>> parse_line(std::string_view line) {
  const std::string_view text = trim(line);
  if (text.empty() || text.front() == '#') return std::optional<FileLine>{};
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos || trim(text.substr(0, equals)).empty()) {
    return fail(Errc::invalid_argument, "expected `key = value` or a # comment");
  }
  return std::optional<FileLine>{
      FileLine{trim(text.substr(0, equals)), trim(text.substr(equals + 1))}};
}

// Calls visit(line_number, line) for every line of `text` (without its newline).
template <class Visit>
void for_each_line(std::string_view text, Visit&& visit) {
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    visit(++number, text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
}

// The file's text; empty when there is none. With `opened`, the fstat of the file read (st_uid 0
// and mode 0644 when there is none).
Result<std::string> read_store_file(const std::filesystem::path& dir,
                                    struct stat* opened = nullptr) {
  constexpr std::uint64_t kMaxConfigBytes = 1 << 20;
  auto text = io::read_file(store_config_path(dir), kMaxConfigBytes, opened);
  if (!text && (text.error().code == Errc::not_found || !file_in_the_way(dir).empty())) {
    return std::string();  // no file; a store path at or under a file is Config::load's to report
  }
  if (!text) {
    return fail(text.error().code, text.error().message,
                "; fix the file or remove it (its settings then take their defaults)");
  }
  return text;
}

}  // namespace

const std::array<StoreSettingInfo, 14> kStoreSettings = {{
    {"max_size", "CUBBY_MAX_SIZE", "5Gi",
     "size bound of the store (least recently used entries are evicted above it): 500M, 1.5G, "
     "5Gi, 5 (a number alone is GiB, as in ccache); 0: unlimited; at most 1Ei",
     SettingTrust::group, apply_max_size},
    {"read_only", "CUBBY_READ_ONLY", "false", "never write the store (a shared, prepared store)",
     SettingTrust::group, apply_read_only},
    {"remote", "CUBBY_REMOTE", "",
     "remote tier: redis://[user:password@]host:port[/db] (rediss:// for TLS, unix:///path for "
     "a socket) or http[s]://[user:password@]host[:port]/prefix[|layout=bazel]; or layers, read "
     "in order and written to the first writable: \"https://cache/main|read-only "
     "redis://pr-cache\"; empty: none",
     SettingTrust::own_file, apply_remote},
    {"remote_mode", "CUBBY_REMOTE_MODE", "readwrite", "read (look up only) or readwrite",
     SettingTrust::group, apply_remote_mode},
    {"remote_ttl", "CUBBY_REMOTE_TTL", "0",
     "expiry of remote entries: 3600, 30m, 12h, 7d; 0: never", SettingTrust::group,
     apply_remote_ttl},
    {"remote_timeout_ms", "CUBBY_REMOTE_TIMEOUT_MS", "500", "bound of each remote call (ms)",
     SettingTrust::group, apply_remote_timeout},
    {"remote_backoff_ms", "CUBBY_REMOTE_BACKOFF_MS", "30000",
     "how long the remote is skipped after a failure (ms)", SettingTrust::group,
     apply_remote_backoff},
    {"remote_max_entry", "CUBBY_REMOTE_MAX_ENTRY", "64Mi",
     "larger entries are neither sent to nor accepted from the remote; at most 1Gi (also what 0 "
     "means); a bound on what this process holds, so taken only from your own cubby.conf",
     SettingTrust::own_file, apply_remote_max_entry},
    {"remote_compress", "CUBBY_REMOTE_COMPRESS", "true", "send remote entries LZ4-compressed",
     SettingTrust::group, apply_remote_compress},
    {"remote_read_ahead", "CUBBY_REMOTE_READ_AHEAD", "true",
     "on a fresh store, fetch the suite's entries (the keys its last run used) ahead of its "
     "lookups",
     SettingTrust::group, apply_remote_read_ahead},
    {"remote_token_file", "CUBBY_REMOTE_TOKEN_FILE", "",
     "file whose first line is the bearer token of http(s) remotes (CUBBY_REMOTE_TOKEN overrides)",
     SettingTrust::own_file, apply_remote_token_file},
    {"remote_ca_file", "CUBBY_REMOTE_CA_FILE", "",
     "CA certificates (PEM) that verify https:// and rediss:// servers; empty: the system store "
     "(SSL_CERT_FILE)",
     SettingTrust::own_file, apply_remote_ca_file},
    {"remote_cert_file", "CUBBY_REMOTE_CERT_FILE", "",
     "client certificate (PEM) shown to a rediss:// server; empty: none", SettingTrust::own_file,
     apply_remote_cert_file},
    {"remote_key_file", "CUBBY_REMOTE_KEY_FILE", "",
     "private key (PEM) of remote_cert_file; empty: in that file", SettingTrust::own_file,
     apply_remote_key_file},
}};

const std::array<ProcessVariableInfo, 14> kProcessVariables = {{
    {"CUBBY_DISABLE", "1: always compile; neither read nor write the store"},
    {"CUBBY_ARCH",
     "architecture when a request names none (sm_90, sm_90a, compute_90); default: "
     "GPU 0's, else sm_90"},
    {"CUBBY_BASE_DIR",
     "an absolute folder (a checkout's root): paths under it enter keys relative to it, so "
     "checkouts in different folders share entries"},
    {"CUBBY_PCH",
     "0: no NVRTC automatic precompiled headers; eager: save one from the first "
     "compile (default 1)"},
    {"CUBBY_SUITE", "record the kernels this process asks for as this suite's recipes"},
    {"CUBBY_PREFETCH", "0: the harness and the pytest plugin start no prefetch"},
    {"CUBBY_JOBS", "worker processes of `cubby warm` and of prefetch (default: one per core)"},
    {"CUBBY_MEMORY_ENTRIES", "entries kept decoded in each process's memory tier (default 1024)"},
    {"CUBBY_REMOTE_SECRET",
     "sign remote entries (HMAC-SHA256); never read from cubby.conf (it is group-readable)"},
    {"CUBBY_REMOTE_TOKEN",
     "bearer token of http(s) remotes (over remote_token_file); never read from cubby.conf"},
    {"CUBBY_NVRTC_LIBRARY", "the libnvrtc.so file to use"},
    {"CUBBY_CLI", "the cubby tool that prefetch starts"},
    {"CUBBY_STATS_FILE", "file to which each process appends its counters as one JSON line"},
    {"CUBBY_REQUIRE_WARM", "1: under the GoogleTest harness, any compile fails the test"},
}};

Result<std::uint64_t> parse_max_size(std::string_view value) {
  Config scratch;
  if (auto applied = apply_max_size(scratch, value); !applied) return applied.error();
  return scratch.max_size;
}

const StoreSettingInfo* find_store_setting(std::string_view key) {
  const auto found = std::find_if(kStoreSettings.begin(), kStoreSettings.end(),
                                  [&](const StoreSettingInfo& info) { return info.key == key; });
  return found == kStoreSettings.end() ? nullptr : &*found;
}

std::filesystem::path store_config_path(const std::filesystem::path& dir) {
  return dir / "cubby.conf";
}

std::filesystem::path file_in_the_way(const std::filesystem::path& dir) {
  for (std::filesystem::path current = dir; !current.empty();) {
    std::error_code error;
    const auto status = std::filesystem::status(current, error);
    if (std::filesystem::exists(status)) {
      return std::filesystem::is_directory(status) ? std::filesystem::path() : current;
    }
    std::filesystem::path parent = current.parent_path();
    if (parent == current) break;
    current = std::move(parent);
  }
  return {};
}

std::string origin_text(const StoreSettingInfo& setting, SettingOrigin origin,
                        const std::filesystem::path& dir) {
  switch (origin) {
    case SettingOrigin::environment:
      return std::string(setting.env);
    case SettingOrigin::store_file:
      return store_config_path(dir).string();
    case SettingOrigin::default_value:
      break;
  }
  return "default";
}

std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '\\') {
      out += "\\\\";
    } else if (byte == 0) {
      out += "\\0";
    } else if (byte < 0x20 || byte >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::vector<EffectiveSetting>> effective_settings(const std::filesystem::path& dir,
                                                         std::vector<std::string>* problems) {
  std::vector<EffectiveSetting> settings;
  for (const StoreSettingInfo& info : kStoreSettings) {
    settings.push_back(
        {&info, std::string(info.default_value), SettingOrigin::default_value, 0, {}, {}});
  }
  struct stat opened {};
  auto text = read_store_file(dir, &opened);
  if (!text) return text.error();
  // Judged on the file that was read (a file swapped in after a check is never the one judged).
  const std::string untrusted =
      text->empty() ? std::string() : io::not_mine_because(opened, /*root_too=*/true);
  Result<void> status;
  for_each_line(*text, [&](std::size_t number, std::string_view line) {
    if (!status) return;
    auto parsed = parse_line(line);
    if (!parsed) {
      status = fail(Errc::invalid_argument, store_config_path(dir).string(), ":",
                    std::to_string(number), ": \"", escaped(line.substr(0, 200)),
                    "\": ", parsed.error().message, "; edit or remove that line");
      if (problems != nullptr) {
        problems->push_back(status.error().message);
        status = {};
      }
      return;
    }
    if (!*parsed) return;
    for (EffectiveSetting& setting : settings) {
      if (setting.info->key != (*parsed)->key) continue;  // an unknown key is ignored
      if (setting.info->trust == SettingTrust::own_file && !untrusted.empty()) {
        setting.ignored_value = std::string((*parsed)->value);
        setting.untrusted_because = store_config_path(dir).string() + " " + untrusted;
        continue;
      }
      setting.value = std::string((*parsed)->value);  // the last line of a key wins
      setting.origin = SettingOrigin::store_file;
      setting.line = number;
    }
  });
  if (!status) return status.error();
  for (EffectiveSetting& setting : settings) {
    const std::string name(setting.info->env);
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') continue;  // an empty variable counts as unset
    setting.value = value;
    setting.origin = SettingOrigin::environment;
    setting.line = 0;
    setting.ignored_value.clear();  // the variable wins: the file's value would not apply anyway
    setting.untrusted_because.clear();
  }
  return settings;
}

Result<void> write_store_setting(const std::filesystem::path& dir, std::string_view key,
                                 const std::optional<std::string>& value) {
  const StoreSettingInfo* info = find_store_setting(key);
  if (info == nullptr) {
    std::string keys;
    for (const StoreSettingInfo& setting : kStoreSettings) {
      keys += (keys.empty() ? "" : ", ") + std::string(setting.key);
    }
    return fail(Errc::invalid_argument, "unknown setting \"", std::string(key),
                "\"; the store's settings are ", keys);
  }
  if (value) {
    Config scratch;
    if (auto applied = info->apply(scratch, *value); !applied) {
      return fail(Errc::invalid_argument, std::string(key), " = \"", *value,
                  "\" is not valid: ", applied.error().message);
    }
    if (value->find('\n') != std::string::npos) {
      return fail(Errc::invalid_argument, "a value is one line; remove the line break");
    }
  }
  auto text = read_store_file(dir);
  if (!text) return text.error();
  std::string out;
  for_each_line(*text, [&](std::size_t, std::string_view line) {
    auto parsed = parse_line(line);
    if (parsed && *parsed && (*parsed)->key == key) return;  // replaced (or removed) below
    out.append(line);
    out += '\n';
  });
  if (value) out += std::string(key) + " = " + *value + "\n";
  // Writable by its writer only: a file the group may write is nobody's to trust (Trust above).
  auto file = io::AtomicFile::create(store_config_path(dir), io::FileMode::owner_writable, true);
  if (!file) return file.error();
  if (auto written = file->write(out); !written) return written.error();
  return file->commit();
}

}  // namespace cubby
