// Per-process statistics as JSON, and their report to the file named by CUBBY_STATS_FILE (how a
// pytest session collects the stats of the C++ processes its tests start); json_text, the one way
// the library turns JSON into text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cubby/stats.hpp"

namespace cubby {

// `document` as compact JSON text. Never fails on content: bytes that are not UTF-8 in its strings
// (program names, options, paths are bytes) become U+FFFD, so the text is valid JSON for every
// parser. Throws only std::bad_alloc.
std::string json_text(const nlohmann::json& document);

// `stats` as a JSON object: one member per counter of kStats (cubby/stats.hpp), by its name.
nlohmann::json stats_to_json(const Stats& stats);

// The counters of a JSON object with members named as stats_to_json writes them (a
// CUBBY_STATS_FILE line, cubby_stats_json, sums of those): members it does not name are ignored,
// missing ones are 0, a negative or non-numeric one is 0. Throws cubby::Error
// (Errc::invalid_argument) when `document` is not an object.
Stats stats_from_json(const nlohmann::json& document);

// The member of a process's JSON (cubby_stats_json, CUBBY_STATS_FILE lines) that holds the first
// program of each reason counted: {"<reason>": "<detail>", ...} (CUBBY_UNCACHED names).
inline constexpr const char* kUncachedFirstMember = "uncached_first";

// `first` as that member's object: the reasons counted in `stats` with a detail.
nlohmann::json uncached_first_to_json(const Stats& stats, const UncachedDetails& first);

// The details of `document`'s kUncachedFirstMember (a JSON object as above; anything else, and
// members that are not reasons or not strings, are ignored).
UncachedDetails uncached_first_from_json(const nlohmann::json& document);

// When CUBBY_STATS_FILE names a file, appends `stats_to_json(stats)` plus "pid" and
// kUncachedFirstMember (the reasons counted in `stats`, this process's uncached_details()) as one
// line with a single O_APPEND write (lines of concurrent processes never interleave), creating the
// file if needed. Does nothing when the variable is unset or empty or when no counter is set. Never
// throws; a file that cannot be written is skipped silently (stats are advisory).
void report_stats_to_file(const Stats& stats) noexcept;

}  // namespace cubby
