// Tests for corpus chrF against the values sacreBLEU 2.x's own tests and README publish.
#include "score/chrf.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"

namespace mpipe::score {
namespace {

using Lines = std::vector<std::string>;
using ReferenceSets = std::vector<Lines>;

TEST(CorpusChrf, DefaultSettingsTwoReferenceSets) {
  // README.md ("Using SacreBLEU from Python"): CHRF().corpus_score(sys, refs) is "chrF2 = 59.73".
  const Lines hyps{"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."};
  const ReferenceSets refs{
      {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
      {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};
  const ChrfScore chrf = corpus_chrf(hyps, refs);
  EXPECT_EQ(chrf.format(), "chrF2 = 59.73");
  EXPECT_NEAR(chrf.score, 59.73, 0.005);
}

TEST(CorpusChrf, EffectiveOrderSmoothing) {
  // test_chrf.py, test_cases_effective_order: char_order=6, word_order=0, beta=3,
  // eps_smoothing=False (the default smoothing), EPSILON 1e-4.
  const std::vector<std::tuple<Lines, Lines, double>> cases{
      {{"a"}, {"a"}, 100.0},       {{""}, {"reference"}, 0.0}, {{"a b c"}, {"a b c"}, 100.0},
      {{"a b c"}, {"abc"}, 100.0}, {{""}, {"c"}, 0.0},         {{"a", "b"}, {"a", "c"}, 50.0},
      {{"aa"}, {"ab"}, 25.0},
  };
  const ChrfOptions beta3{.beta = 3};
  for (const auto& [hyps, refs, expected] : cases) {
    EXPECT_NEAR(corpus_chrf(hyps, refs, beta3).score, expected, 1e-4)
        << hyps[0] << " | " << refs[0];
  }
}

TEST(CorpusChrf, EpsSmoothing) {
  // test_chrf.py, test_cases: char_order=6, word_order=0, beta=3, eps_smoothing=True,
  // EPSILON 1e-4. The German case has non-ASCII letters and runs of spaces to remove.
  const std::vector<std::tuple<Lines, Lines, double>> cases{
      {{"abcdefg"}, {"hijklmnop"}, 0.0},
      {{"a"}, {"b"}, 0.0},
      {{""}, {"reference"}, 0.0},
      {{"aa"}, {"ab"}, 8.3333},
      {{"a", "b"}, {"a", "c"}, 8.3333},
      {{"a"}, {"a"}, 16.6667},
      {{"a b c"}, {"abc"}, 50.0},
      {{" risk assessment must be made of those who are qualified and expertise in the sector - "
        "these are the scientists ."},
       {"risk assessment has to be undertaken by those who are qualified and expert in that area - "
        "that is the scientists ."},
       63.361730},
      {{" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "},
       {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
       64.1302698},
      {{"Niemand hat die Absicht, eine Mauer zu errichten"},
       {"Niemand hat die Absicht, eine Mauer zu errichten"},
       100.0},
  };
  const ChrfOptions eps{.beta = 3, .eps_smoothing = true};
  for (const auto& [hyps, refs, expected] : cases) {
    EXPECT_NEAR(corpus_chrf(hyps, refs, eps).score, expected, 1e-4) << hyps[0] << " | " << refs[0];
  }
}

TEST(CorpusChrf, NonAsciiSentences) {
  // test_chrf.py, test_sentence_level_chrf: sentence_chrf(hyp, refs, eps_smoothing=True) with
  // beta 2, EPSILON 1e-4 (Czech: á, í, ř, ž, ě... count as one character each).
  const std::vector<std::tuple<std::string, std::string, double>> cases{
      {"Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
       "Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře.",
       39.14078509},
      {"Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
       "A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři.", 31.22557079},
      {"Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
       "Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli.",
       57.15704367},
  };
  const ChrfOptions eps{.eps_smoothing = true};
  for (const auto& [hyp, ref, expected] : cases) {
    EXPECT_NEAR(corpus_chrf(Lines{hyp}, Lines{ref}, eps).score, expected, 1e-4) << hyp;
  }
}

TEST(ChrfStatistics, CountsCodePointsNotBytes) {
  // "žít a" without its space is 4 characters (5 bytes); the reference "žít" has 3.
  const ReferenceSets refs{{"žít"}};
  const ChrfStatistics stats = chrf_statistics(Lines{"žít a"}, refs);
  EXPECT_EQ(stats.hyp, (std::vector<int64_t>{4, 3, 2, 0, 0, 0}));  // no 4-gram in the reference
  EXPECT_EQ(stats.ref, (std::vector<int64_t>{3, 2, 1, 0, 0, 0}));
  EXPECT_EQ(stats.match, (std::vector<int64_t>{3, 2, 1, 0, 0, 0}));
  EXPECT_NEAR(corpus_chrf(Lines{"žít"}, Lines{"žít"}).score, 100.0, 1e-8);
}

TEST(ChrfStatistics, SumsOfPartsGiveTheCorpusScore) {
  const ChrfOptions beta3{.beta = 3};
  const ReferenceSets a{{"a"}};
  const ReferenceSets c{{"c"}};
  ChrfStatistics stats = chrf_statistics(Lines{"a"}, a, beta3);
  stats += chrf_statistics(Lines{"b"}, c, beta3);
  // test_chrf.py, test_cases_effective_order: (["a", "b"], ["a", "c"]) is 50.0.
  EXPECT_NEAR(compute_chrf(stats, beta3).score, 50.0, 1e-4);
}

TEST(CorpusChrf, MismatchedLengthsAreRefused) {
  EXPECT_THROW(corpus_chrf(Lines{"a", "b"}, Lines{"a"}), InputError);
  EXPECT_THROW(corpus_chrf(Lines{"a"}, ReferenceSets{}), InputError);
}

}  // namespace
}  // namespace mpipe::score
