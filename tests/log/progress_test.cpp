// Tests for the progress line: exact text, in-place terminal updates, plain lines, ETA.
#include "log/progress.h"

#include <gtest/gtest.h>

#include <memory>

namespace mpipe::log {
namespace {

// A temporary FILE* whose whole contents can be read back.
class CapturedFile {
 public:
  CapturedFile() : file_(std::tmpfile(), &std::fclose) {}
  std::FILE* get() const { return file_.get(); }
  std::string contents() const {
    std::fflush(file_.get());
    std::rewind(file_.get());
    std::string text;
    for (int c = std::fgetc(file_.get()); c != EOF; c = std::fgetc(file_.get())) {
      text.push_back(static_cast<char>(c));
    }
    return text;
  }

 private:
  std::unique_ptr<std::FILE, decltype(&std::fclose)> file_;
};

ProgressRecord record(int64_t step, double elapsed_s) {
  return {
      .step = step, .loss = 0.41234, .lr = 1e-3, .samples_per_s = 5321.4, .elapsed_s = elapsed_s};
}

TEST(Progress, DurationsReadAsHoursMinutesSeconds) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(7.4), "7s");
  EXPECT_EQ(format_duration(59.6), "1m00s");
  EXPECT_EQ(format_duration(83), "1m23s");
  EXPECT_EQ(format_duration(2 * 3600 + 5 * 60 + 7), "2h05m07s");
  EXPECT_EQ(format_duration(-3), "0s");
}

TEST(Progress, LineShowsStepLossLrThroughputAndEta) {
  EXPECT_EQ(format_progress(record(120, 10), 1000, 83.0),
            "step 120/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 1m23s");
  EXPECT_EQ(format_progress(record(0, 0), 1000, std::nullopt),
            "step 0/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA --");
}

TEST(Progress, RatesKeepThreeSignificantDigitsBelowAHundred) {
  EXPECT_EQ(format_rate(5321.4), "5321");
  EXPECT_EQ(format_rate(100.2), "100");
  EXPECT_EQ(format_rate(42.54), "42.5");
  EXPECT_EQ(format_rate(0.4234), "0.423");
  EXPECT_EQ(format_rate(0.001234), "0.00123");
  EXPECT_EQ(format_rate(0), "0");
}

TEST(Progress, SlowRunShowsItsRateNotZeroAndItsSecondsPerStep) {
  ProgressRecord slow = record(3, 30);
  slow.samples_per_s = 0.42;
  slow.seconds_per_step = 76.19;
  EXPECT_EQ(format_progress(slow, 10, 70.0),
            "step 3/10 | loss 0.4123 | lr 1.00e-03 | 0.42 samples/s | 76.2 s/step | ETA 1m10s");
  slow.tokens_per_s = 0.0042;  // token data: tokens/s too, never rounded to 0
  EXPECT_EQ(format_progress(slow, 10, 70.0),
            "step 3/10 | loss 0.4123 | lr 1.00e-03 | 0.42 samples/s | 76.2 s/step | "
            "0.0042 tokens/s | ETA 1m10s");
}

TEST(Progress, SecondsPerStepOnlyBelowTenSamplesPerSecond) {
  ProgressRecord fast = record(3, 30);
  fast.samples_per_s = 10.0;
  fast.seconds_per_step = 25.6;
  fast.tokens_per_s = 640.0;
  EXPECT_EQ(format_progress(fast, 10, 70.0),
            "step 3/10 | loss 0.4123 | lr 1.00e-03 | 10 samples/s | ETA 1m10s");
  fast.samples_per_s = 9.99;
  EXPECT_EQ(format_progress(fast, 10, 70.0),
            "step 3/10 | loss 0.4123 | lr 1.00e-03 | 9.99 samples/s | 25.6 s/step | "
            "640 tokens/s | ETA 1m10s");
}

TEST(Progress, ARunThatASupervisorRelaunchedCountsItsRecoveriesLast) {
  ProgressRecord line = record(120, 10);
  line.recoveries = 1;
  EXPECT_EQ(format_progress(line, 1000, 83.0),
            "step 120/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 1m23s | 1 recovery");
  line.recoveries = 2;
  EXPECT_EQ(format_progress(line, 1000, std::nullopt),
            "step 120/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA -- | 2 recoveries");
  line.widenings = 1;  // relaunched wider once a host answered again
  EXPECT_EQ(format_progress(line, 1000, std::nullopt),
            "step 120/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA -- | 2 recoveries | "
            "1 widening");
  line.recoveries = 0;  // (a serve experiment started after the loss, on fewer hosts)
  line.widenings = 2;
  EXPECT_EQ(format_progress(line, 1000, std::nullopt),
            "step 120/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA -- | 2 widenings");
}

TEST(Progress, ModelFlopsUtilizationFollowsTheRatesWhenKnown) {
  ProgressRecord line = record(3, 30);
  line.mfu = 0.1234;
  EXPECT_EQ(format_progress(line, 10, 70.0),
            "step 3/10 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | MFU 12.3% | ETA 1m10s");
  line.samples_per_s = 0.42;
  line.seconds_per_step = 76.19;
  line.mfu = 0.004567;  // three significant digits: never rounded to 0
  EXPECT_EQ(format_progress(line, 10, 70.0),
            "step 3/10 | loss 0.4123 | lr 1.00e-03 | 0.42 samples/s | 76.2 s/step | "
            "MFU 0.457% | ETA 1m10s");
}

TEST(Progress, EvaluationShowsLossAndAccuracyAndBitsPerCharForText) {
  EXPECT_EQ(format_evaluation({.step = 200,
                               .loss = 0.41234,
                               .accuracy = 0.85314,
                               .bits_per_char = std::nullopt,
                               .unigram_entropy_bits = std::nullopt,
                               .bits_per_byte = std::nullopt,
                               .perplexity = std::nullopt,
                               .bleu = std::nullopt,
                               .chrf = std::nullopt}),
            "step 200: test loss 0.4123 | test accuracy 85.31%");
  EXPECT_EQ(format_evaluation({.step = 50,
                               .loss = 1.9,
                               .accuracy = 0.4,
                               .bits_per_char = 2.7412,
                               .unigram_entropy_bits = 4.9623,
                               .bits_per_byte = std::nullopt,
                               .perplexity = std::nullopt,
                               .bleu = std::nullopt,
                               .chrf = std::nullopt}),
            "step 50: test loss 1.9000 | test accuracy 40.00% | 2.741 bits/char (unigram entropy "
            "4.962)");
}

TEST(Progress, EvaluationOfARegressionLossShowsNoAccuracy) {
  EXPECT_EQ(format_evaluation({.step = 600,
                               .loss = 7.74312,
                               .accuracy = std::nullopt,
                               .bits_per_char = std::nullopt,
                               .unigram_entropy_bits = std::nullopt,
                               .bits_per_byte = std::nullopt,
                               .perplexity = std::nullopt,
                               .bleu = std::nullopt,
                               .chrf = std::nullopt}),
            "step 600: test loss 7.7431");
}

TEST(Progress, EvaluationNamesItsSplitAndShowsPerplexityAndBitsPerByteForTokenizedText) {
  EXPECT_EQ(format_evaluation({.step = 30,
                               .split = "val",
                               .loss = 3.2,
                               .accuracy = 0.25,
                               .bits_per_char = std::nullopt,
                               .unigram_entropy_bits = std::nullopt,
                               .bits_per_byte = 1.91449,
                               .perplexity = 24.5325,
                               .bleu = std::nullopt,
                               .chrf = std::nullopt}),
            "step 30: val loss 3.2000 | val accuracy 25.00% | perplexity 24.53 | 1.914 bits/byte");
}

TEST(Progress, EvaluationOfATranslationModelShowsItsBleuAndChrf) {
  EXPECT_EQ(format_evaluation({.step = 40,
                               .split = "val",
                               .loss = 2.5,
                               .accuracy = 0.5,
                               .bits_per_char = std::nullopt,
                               .unigram_entropy_bits = std::nullopt,
                               .bits_per_byte = std::nullopt,
                               .perplexity = 12.1825,
                               .bleu = 31.2049,
                               .chrf = 55.0312}),
            "step 40: val loss 2.5000 | val accuracy 50.00% | perplexity 12.18 | BLEU 31.20 | "
            "chrF2 55.03");
}

TEST(Progress, PlainStreamGetsOneLinePerUpdate) {
  CapturedFile out;
  {
    ProgressLine line(out.get(), false, 100);
    line.update(record(10, 1.0));
    line.update(record(20, 2.0));
    line.finish();
  }
  EXPECT_EQ(out.contents(),
            "step 10/100 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 9s\n"
            "step 20/100 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 8s\n");
}

TEST(Progress, TerminalLineIsRewrittenInPlaceAndEndedOnce) {
  CapturedFile out;
  ProgressLine line(out.get(), true, 100);
  line.update(record(10, 1.0));
  line.update(record(100, 10.0));
  line.finish();
  line.finish();
  EXPECT_EQ(out.contents(),
            "\r\x1b[2Kstep 10/100 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 9s"
            "\r\x1b[2Kstep 100/100 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 0s\n");
}

TEST(Progress, DestroyingAnOpenTerminalLineEndsIt) {
  CapturedFile out;
  { ProgressLine(out.get(), true, 10).update(record(1, 1.0)); }
  EXPECT_EQ(out.contents().back(), '\n');
  CapturedFile untouched;
  { ProgressLine line(untouched.get(), true, 10); }
  EXPECT_EQ(untouched.contents(), "");
}

TEST(Progress, ResumedRunEstimatesFromItsOwnSteps) {
  CapturedFile out;
  ProgressLine line(out.get(), false, 1000, 500);
  line.update(record(510, 10.0));  // 10 steps in 10 s, 490 left
  EXPECT_EQ(out.contents(),
            "step 510/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 8m10s\n");
}

TEST(Progress, ALabelNamesEachLine) {
  CapturedFile out;
  ProgressLine line(out.get(), false, 100, 0, "mlp-1");
  line.update(record(10, 1.0));
  EXPECT_EQ(out.contents(),
            "mlp-1: step 10/100 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | ETA 9s\n");
}

TEST(Progress, EtaIsTheTimeLeftAtThisRunsSpeedAndUnknownBeforeItsFirstStep) {
  EXPECT_EQ(estimate_eta_s(record(510, 10.0), 1000, 500), 490.0);
  EXPECT_EQ(estimate_eta_s(record(1000, 10.0), 1000, 500), 0.0);
  EXPECT_FALSE(estimate_eta_s(record(500, 10.0), 1000, 500));
  EXPECT_FALSE(estimate_eta_s(record(510, 0.0), 1000, 500));
}

TEST(Progress, RegularFileIsNotATerminal) {
  CapturedFile out;
  EXPECT_FALSE(stream_is_terminal(out.get()));
}

}  // namespace
}  // namespace mpipe::log
