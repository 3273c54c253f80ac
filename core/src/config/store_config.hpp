// The store's config file, <store>/cubby.conf: settings kept with the store (its size bound, its
// access mode, its remote tier), shared by every process that opens the store, so `cubby gc`, the
// library's own eviction and `cubby stats` agree on one bound without every shell exporting it.
//
// Grammar (ccache's):   line    = blank | comment | setting
//                       comment = optional spaces, "#", anything
//                       setting = optional spaces, key, optional spaces, "=", value
// The value is trimmed of surrounding spaces; a key is one of kStoreSettings' keys. A key that
// this version does not know is ignored (another release may share the store); a line that is no
// setting, or a value its setting refuses, is an error naming the file and the line.
//
// Precedence: a CUBBY_* variable over the file over the default (Config::load applies them).
//
// Trust (the store is shared by a group: its file is input from whoever wrote it last). Settings
// that name a remote, a credential or any other file (SettingTrust::own_file: remote,
// remote_token_file, remote_ca_file, remote_cert_file, remote_key_file) are taken from the file
// only when no other user can have written it: a regular file owned by the current user or root
// and writable by neither its group nor others (util/file_trust.hpp, judged on the file read).
// Otherwise they are ignored (the variable or the default applies; never a mix of the file's
// and the variables' files) and Config::load warns once per process, naming the file, its owner
// and what to do. The other settings (sizes, modes, time bounds) are read from any member's file:
// a group member can already fill, empty or rewrite the store itself. cubby writes the file
// 0644 (io::FileMode::owner_writable), so a member's `cubby config` makes it that member's.
// Settings that belong to a process or a person rather than to the store (CUBBY_DISABLE,
// CUBBY_ARCH, CUBBY_SUITE, CUBBY_JOBS, CUBBY_PCH, CUBBY_BASE_DIR, CUBBY_MEMORY_ENTRIES, and
// CUBBY_REMOTE_SECRET, which must not sit in a group-readable file) are variables only.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/config.hpp"
#include "cubby/error.hpp"

namespace cubby {

// Who a setting is taken from in the store's file (see Trust above).
enum class SettingTrust : std::uint8_t {
  group,     // any writer of the file: the setting cannot send anything anywhere
  own_file,  // names a remote or a file: only from a file the current user or root wrote
};

// One setting the store's file may hold. `apply` parses `value` into `config`; invalid_argument
// with what is expected (no name: callers name the variable or the file line).
struct StoreSettingInfo {
  std::string_view key;            // in cubby.conf and `cubby config`
  std::string_view env;            // the variable that overrides it
  std::string_view default_value;  // as text, what Config holds unless told
  std::string_view what;           // one line for `cubby config --help` and the man page
  SettingTrust trust;
  Result<void> (*apply)(Config& config, std::string_view value);
};

// Every setting of cubby.conf, in `cubby config`'s order (one source of truth: parsing, listing,
// help and the README table follow it).
extern const std::array<StoreSettingInfo, 14> kStoreSettings;

// The largest entry cubby writes or reads (1 GiB): the disk tier refuses a bigger file at an
// entry path like a corrupt one, so a read never allocates more than this; it is also the cap of
// remote_max_entry (what 0 there means).
inline constexpr std::uint64_t kMaxEntryBytes = 1ull << 30;

// A store size bound as max_size takes it: parse_size's forms, except that a number without a
// unit is GiB (as in ccache: "5" is 5Gi; "5B" is bytes), at most kMaxStoreSize, "0" giving
// kUnlimitedMaxSize (as in ccache, 0 means no bound). invalid_argument saying what is expected.
Result<std::uint64_t> parse_max_size(std::string_view value);

// A setting that belongs to a process, not to the store: a CUBBY_* variable only (Config::load
// and the tools read them). The man page's ENVIRONMENT and the README's table list them from here.
struct ProcessVariableInfo {
  std::string_view env;
  std::string_view what;
};
extern const std::array<ProcessVariableInfo, 14> kProcessVariables;

// The setting named `key`, or nullptr.
const StoreSettingInfo* find_store_setting(std::string_view key);

// <dir>/cubby.conf.
std::filesystem::path store_config_path(const std::filesystem::path& dir);

// The file in the way of a store folder: the path at or above `dir` (itself, then each parent)
// that exists and is not a folder (links followed), "afile" for "afile/sub" when afile is a
// regular file. Empty when there is none.
std::filesystem::path file_in_the_way(const std::filesystem::path& dir);

// Where a setting's value comes from.
enum class SettingOrigin : std::uint8_t { default_value, store_file, environment };

// "default", "<dir>/cubby.conf", "CUBBY_MAX_SIZE" (the variable) for `setting`'s `origin`.
std::string origin_text(const StoreSettingInfo& setting, SettingOrigin origin,
                        const std::filesystem::path& dir);

// A setting's value as it takes effect, and where it comes from.
struct EffectiveSetting {
  const StoreSettingInfo* info = nullptr;
  std::string value;  // as written in the variable or the file, else the default's text
  SettingOrigin origin = SettingOrigin::default_value;
  std::size_t line = 0;  // the file's line (1-based) when origin is store_file
  // The file's value of an own_file setting when the file may have been written by another user
  // and no variable sets it: ignored (`value` is the default), with why (`untrusted_because`:
  // "<file> is owned by nobody (uid 65534), not by you (alice) or root"). Empty otherwise.
  std::string ignored_value;
  std::string untrusted_because;
};

// Every setting of kStoreSettings in order, as the environment and <dir>/cubby.conf give it (the
// values are not checked: Config::load does; the trust rule above is applied). Errc::io if the file
// exists but cannot be read. A line that is no setting: Errc::invalid_argument naming the file and
// line; or, with `problems`, that message is appended there and the line is skipped (Config::load
// warns and goes on: one bad line must not stop every process on the store).
Result<std::vector<EffectiveSetting>> effective_settings(
    const std::filesystem::path& dir, std::vector<std::string>* problems = nullptr);

// `text` as it can be shown in a message: printable ASCII as it is, a backslash and every other
// byte escaped (`\0` for NUL, `\x1b`, ...), so that nothing is dropped or garbles a terminal.
std::string escaped(std::string_view text);

// Writes `key = value` into <dir>/cubby.conf (replacing the key's lines, keeping every other line
// and comment; creating the file and the folder if missing), atomically. With no value, removes
// the key's lines (the default then applies). invalid_argument for an unknown key or a value the
// setting refuses; Errc::io if the file cannot be written.
Result<void> write_store_setting(const std::filesystem::path& dir, std::string_view key,
                                 const std::optional<std::string>& value);

}  // namespace cubby
