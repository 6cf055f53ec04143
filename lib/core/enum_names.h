// Enum names: one table per enum serves both directions, the value a word of an experiment file
// or the command line reads as, and the word a value is written as (logs, resolved settings).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mpipe {

template <typename E>
using EnumName = std::pair<std::string_view, E>;

// The table of an enum with N values: every value once, in declaration order.
template <typename E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

// The word for `value`; "?" when the table lacks it (each enum's test reads every name back).
template <typename E, std::size_t N>
constexpr std::string_view name_of(const EnumNames<E, N>& names, E value) {
  for (const auto& [name, named] : names) {
    if (named == value) return name;
  }
  return "?";
}

// The value `word` names, or nullopt.
template <typename E, std::size_t N>
constexpr std::optional<E> value_named(const EnumNames<E, N>& names, std::string_view word) {
  for (const auto& [name, value] : names) {
    if (name == word) return value;
  }
  return std::nullopt;
}

// The words joined for a message: "a, b, c" (separator ", ") or "a, b or c" (last " or ").
template <typename E, std::size_t N>
std::string list_names(const EnumNames<E, N>& names, std::string_view last = ", ") {
  std::string text;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) text += i + 1 == N ? last : std::string_view(", ");
    text += names[i].first;
  }
  return text;
}

}  // namespace mpipe
