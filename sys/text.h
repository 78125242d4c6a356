#pragma once
/// Text for messages: a user's value quoted short, names listed, and the name a typo meant.
/// Every layer's refusals use them (search/ for options, config/ for keys and values, train/
/// for trainable keys, io/ for column names), so they sit here, below all of them.

#include <cstddef>
#include <string>
#include <vector>

namespace ranktune::sys {

/// At most `max` characters of `s`, marked where cut, to quote a user's value in a message
/// (a 1 MB name must not make a 1 MB error).
std::string excerpt(const std::string& s, std::size_t max = 64);

/// "a, b, c": names as error messages list them.
std::string comma_list(const std::vector<std::string>& names);

/// The closest of `candidates` to `word` by edit distance, or "" when none is close enough
/// to be a typo.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ranktune::sys
