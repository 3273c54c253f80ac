// Settings, from CUBBY_* environment variables and the store's own file <store>/cubby.conf (see
// README.md, "Configuration", and `cubby config`): a variable over the file over the default.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "cubby/error.hpp"
#include "cubby/export.h"

namespace cubby {

// The largest remote expiry (seconds, about 285 million years): Redis refuses a SET whose EX,
// in milliseconds from now, overflows a signed 64-bit number (about 9.22e15 s), and would so
// refuse every write. CUBBY_REMOTE_TTL above it is invalid.
inline constexpr std::uint64_t kMaxRemoteTtlS = 9'000'000'000'000'000;

// The largest store size bound CUBBY_MAX_SIZE / max_size accepts (1 EiB); a larger value is an
// error, never a wrap. A bound of 0 there means "unlimited", kept as kUnlimitedMaxSize (above
// every real store, and within std::int64_t where the store's byte counts live).
inline constexpr std::uint64_t kMaxStoreSize = 1ull << 60;
inline constexpr std::uint64_t kUnlimitedMaxSize = 1ull << 62;

struct CUBBY_API Config {
  std::filesystem::path dir;  // CUBBY_DIR, else $XDG_CACHE_HOME/cubby, else ~/.cache/cubby
  // CUBBY_MAX_SIZE ("5Gi", "500M", "1.5G", "5": GiB; 0: unlimited, i.e. kUnlimitedMaxSize);
  // below 1 MiB from_env warns once (nearly all evicted).
  std::uint64_t max_size = 5ull << 30;
  std::string remote_url;                 // CUBBY_REMOTE (URL or layers); empty: none
  std::string remote_secret;              // CUBBY_REMOTE_SECRET: sign and verify remote entries
  bool remote_read_only = false;          // CUBBY_REMOTE_MODE=read: look up, never write the remote
  std::uint32_t remote_timeout_ms = 500;  // CUBBY_REMOTE_TIMEOUT_MS: bound of each whole call
  std::uint32_t remote_backoff_ms =
      30000;  // CUBBY_REMOTE_BACKOFF_MS: skip the remote after a failure
  std::uint64_t remote_max_entry = 64ull
                                   << 20;  // CUBBY_REMOTE_MAX_ENTRY: bigger: not sent/accepted
  std::uint64_t remote_ttl_s = 0;  // CUBBY_REMOTE_TTL ("3600", "30m", "12h", "7d"); 0: no expiry
                                   // (at most kMaxRemoteTtlS)
  bool remote_compress = true;     // CUBBY_REMOTE_COMPRESS=0: send entries uncompressed (LZ4 else)
  // CUBBY_REMOTE_READ_AHEAD=0: a fresh store does not fetch its suite's entries ahead of its
  // lookups (storage/remote/read_ahead.hpp)
  bool remote_read_ahead = true;
  // CUBBY_REMOTE_TOKEN: bearer token for http(s) remotes (a variable only, like the secret)
  std::string remote_token;
  std::filesystem::path remote_token_file;  // CUBBY_REMOTE_TOKEN_FILE: the token's file (line 1)
  std::string remote_ca_file;    // CUBBY_REMOTE_CA_FILE: CAs of https:// and rediss://; empty:
                                 // the system store (SSL_CERT_FILE)
  std::string remote_cert_file;  // CUBBY_REMOTE_CERT_FILE: client certificate for rediss://
  std::string remote_key_file;   // CUBBY_REMOTE_KEY_FILE: its key; empty: in the cert file
  bool read_only = false;        // CUBBY_READ_ONLY=1: never write the store
  bool disabled = false;         // CUBBY_DISABLE=1: always compile, never read or write
  // CUBBY_PCH=0: compile without NVRTC's automatic precompiled headers (kept per process in the
  // store's tmp/ folder; NVRTC 12.8+; off in a read-only store)
  bool pch = true;
  // CUBBY_PCH=eager: save the PCH from the first compile of each set of headers and options
  // (else the second compile saves it and the first goes without: saving costs about a quarter
  // more than the compile, which a process compiling one program never gets back). For processes
  // that compile many programs; `cubby warm` gives it to its workers when each gets several.
  bool pch_eager = false;
  std::string default_arch;  // CUBBY_ARCH; empty: GPU 0's, else sm_90
  // CUBBY_BASE_DIR (absolute): paths under it enter keys relative to it, so checkouts of one
  // project in different folders (CI runners) share entries; empty: paths enter keys as they are.
  std::filesystem::path base_dir;
  std::size_t memory_entries = 1024;  // CUBBY_MEMORY_ENTRIES: memory tier size (a count: "1024")
  // CUBBY_SUITE: record what this process compiles as suite `suite`'s recipes (format/recipe.hpp)
  // when it finishes; empty: record nothing (the GoogleTest harness and the pytest plugin name
  // their suite when this is empty: the test binary's file name, "pytest-<rootdir name>").
  std::string suite;
  // CUBBY_PREFETCH=0: the harness and the pytest plugin do not start `cubby warm --prefetch`.
  bool prefetch = true;
  // CUBBY_JOBS: worker processes of `cubby warm` and of prefetch; 0: one per core. Never more
  // than the cores this process may run on.
  unsigned jobs = 0;

  // load({}): the store CUBBY_DIR (else the XDG default) names.
  static Result<Config> from_env();
  // The settings of the store in `dir` (empty: default_store_dir()): for the store's settings
  // (max_size, read_only, remote*: the keys of `cubby config`), CUBBY_* variables over the
  // store's file <dir>/cubby.conf over the defaults; the other settings from variables only.
  // invalid_argument for a malformed value, naming the variable or the file and its line; Errc::io
  // if the file exists but cannot be read. A missing file (or store) means defaults.
  static Result<Config> load(const std::filesystem::path& dir);
};

// The store folder the contract names: CUBBY_DIR, else $XDG_CACHE_HOME/cubby, else ~/.cache/cubby.
CUBBY_API std::filesystem::path default_store_dir();

// Parses a size as ccache does: "123" (bytes), "10k", "500M", "1.5G", "1T" (powers of 1000),
// "64Ki", "5Gi", "1Ti" (powers of 1024); units in any case, each with an optional "B"; decimals
// are rounded down to whole bytes. invalid_argument for anything else or over 2^64 - 1 (each
// setting has its own, lower cap: see config/store_config.hpp).
CUBBY_API Result<std::uint64_t> parse_size(std::string_view text);

// Parses "90", "90s", "30m", "12h", "7d" into seconds; invalid_argument otherwise.
CUBBY_API Result<std::uint64_t> parse_duration_s(std::string_view text);

// Parses "1/0", "true/false", "yes/no", "on/off" (any case); invalid_argument otherwise.
CUBBY_API Result<bool> parse_bool(std::string_view text);

}  // namespace cubby
