#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ringside/config_spec.h"

namespace ringside::config {
namespace {

TEST(ConfigParse, IntegersParseFullyOrFail) {
  EXPECT_EQ(parse_int("42").value(), 42);
  EXPECT_EQ(parse_int("-7").value(), -7);
  EXPECT_EQ(parse_int("+7").value(), 7);
  for (const char* bad : {"", "4x", "x4", " 4", "4 ", "1.5", "0x10", "99999999999999999999"}) {
    auto r = parse_int(bad);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' parsed";
    EXPECT_NE(r.message().find(std::string("'") + bad + "'"), std::string::npos) << r.message();
  }
}

TEST(ConfigParse, Doubles) {
  EXPECT_DOUBLE_EQ(parse_double("2.5").value(), 2.5);
  for (const char* bad : {"", "nan", "inf", "2.5.1", "1e", "abc"})
    EXPECT_FALSE(parse_double(bad).ok()) << bad;
}

TEST(ConfigParse, Bools) {
  for (const char* t : {"1", "true", "YES", "on"}) EXPECT_TRUE(parse_bool(t).value()) << t;
  for (const char* f : {"0", "false", "No", "off"}) EXPECT_FALSE(parse_bool(f).value()) << f;
  for (const char* bad : {"", "2", "maybe", "truee"}) EXPECT_FALSE(parse_bool(bad).ok()) << bad;
}

TEST(ConfigParse, Durations) {
  EXPECT_DOUBLE_EQ(parse_seconds("2").value(), 2.0);
  EXPECT_DOUBLE_EQ(parse_seconds("500ms").value(), 0.5);
  EXPECT_DOUBLE_EQ(parse_seconds("5m").value(), 300.0);
  EXPECT_DOUBLE_EQ(parse_seconds("1h").value(), 3600.0);
  for (const char* bad : {"", "s", "5x", "five", "1.2.3s"})
    EXPECT_FALSE(parse_seconds(bad).ok()) << bad;
}

TEST(ConfigParse, Sizes) {
  EXPECT_EQ(parse_bytes("8").value(), 8u);
  EXPECT_EQ(parse_bytes("64K").value(), 64u << 10);
  EXPECT_EQ(parse_bytes("1M").value(), 1u << 20);
  EXPECT_EQ(parse_bytes("8G").value(), 8ULL << 30);
  EXPECT_EQ(parse_bytes("2GB").value(), 2ULL << 30);
  for (const char* bad : {"", "-1", "1.5G", "8Q", "G", "99999999999999T"}) {
    EXPECT_FALSE(parse_bytes(bad).ok()) << bad;
  }
}

const OptionSpec kSpecs[] = {
    {"T_OUT", Type::kString, "traces", "output dir"},
    {"T_HZ", Type::kInt, "2", "sample rate", 0, 10},
    {"T_ON", Type::kBool, "1", "enable"},
    {"T_WAIT", Type::kSeconds, "300", "watchdog", 0.001, 86400},
    {"T_MODE", Type::kString, "a", "mode", 0, -1, "a|b"},
};

TEST(ConfigEnv, DefaultsAndValidValues) {
  std::vector<char*> env = {const_cast<char*>("T_HZ=5"), const_cast<char*>("T_WAIT=2s"),
                            const_cast<char*>("OTHER=1"), nullptr};
  ParseResult r = parse_env(kSpecs, "T_", env.data());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.values.get_int("T_HZ"), 5);
  EXPECT_TRUE(r.values.is_set("T_HZ"));
  EXPECT_FALSE(r.values.is_set("T_OUT"));
  EXPECT_EQ(r.values.get_string("T_OUT"), "traces");
  EXPECT_DOUBLE_EQ(r.values.get_double("T_WAIT"), 2.0);
  EXPECT_TRUE(r.values.get_bool("T_ON"));
}

TEST(ConfigEnv, AllErrorsReportedAtOnceAndDefaultsKept) {
  std::vector<char*> env = {const_cast<char*>("T_HZ=11"),    const_cast<char*>("T_ON=maybe"),
                            const_cast<char*>("T_MODE=c"),   const_cast<char*>("T_TYPO=1"),
                            const_cast<char*>("T_WAIT=abc"), nullptr};
  ParseResult r = parse_env(kSpecs, "T_", env.data());
  ASSERT_EQ(r.errors.size(), 5u);
  std::string all;
  for (auto& e : r.errors) all += e + "\n";
  EXPECT_NE(all.find("T_HZ=11: must be between 0 and 10"), std::string::npos) << all;
  EXPECT_NE(all.find("T_ON=maybe"), std::string::npos) << all;
  EXPECT_NE(all.find("one of a|b"), std::string::npos) << all;
  EXPECT_NE(all.find("T_TYPO is not a known variable"), std::string::npos) << all;
  EXPECT_NE(all.find("T_WAIT=abc"), std::string::npos) << all;
  EXPECT_EQ(r.values.get_int("T_HZ"), 2);
  EXPECT_EQ(r.values.get_string("T_MODE"), "a");
}

TEST(ConfigEcho, ShortValuesAreShownAsTheyAre) {
  EXPECT_EQ(echo("12abc"), "12abc");
  EXPECT_EQ(echo(""), "");
  EXPECT_EQ(echo(std::string(kEchoBytes, 'x')), std::string(kEchoBytes, 'x'));
}

TEST(ConfigEcho, LongValuesAreCutAndSayHowLongTheyWere) {
  const std::string huge(100000, '7');
  EXPECT_EQ(echo(huge), std::string(kEchoBytes, '7') + "... (100000 bytes)");
  // Never half a UTF-8 character: "é" is two bytes, the cut falls inside the last one.
  std::string accents;
  while (accents.size() < kEchoBytes + 10) accents += "\xc3\xa9";
  const std::string shown = echo("x" + accents);
  EXPECT_EQ(shown.substr(0, kEchoBytes - 1), ("x" + accents).substr(0, kEchoBytes - 1));
  EXPECT_EQ(shown.substr(kEchoBytes - 1, 4), "... ") << shown;
}

TEST(ConfigEcho, ControlCharactersAreNeutralised) {
  EXPECT_EQ(echo("a\nb\x1b[31mc\x7f\td"), "a?b?[31mc??d");
}

// Every rank prints these errors: a 100 KB value must not flood the job's log.
TEST(ConfigEnv, HugeAndBinaryValuesAreEchoedBounded) {
  std::string hz = "T_HZ=" + std::string(100000, '9') + "\n\x1b]0;pwned\x07";
  std::string name = "T_" + std::string(50000, 'Z') + "=1";
  std::string mode = "T_MODE=" + std::string(100000, 'q');
  std::vector<char*> env = {hz.data(), name.data(), mode.data(), nullptr};
  ParseResult r = parse_env(kSpecs, "T_", env.data());
  ASSERT_EQ(r.errors.size(), 3u);
  for (const std::string& e : r.errors) {
    EXPECT_LT(e.size(), 600u) << e.substr(0, 600);
    for (char c : e) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << e;
  }
  std::string all;
  for (auto& e : r.errors) all += e + "\n";
  EXPECT_NE(all.find("T_HZ=999"), std::string::npos) << all;
  EXPECT_NE(all.find("(100011 bytes)"), std::string::npos) << all;
  EXPECT_NE(all.find("(50002 bytes) is not a known variable"), std::string::npos) << all;
  EXPECT_NE(all.find("T_MODE=qqq"), std::string::npos) << all;
  EXPECT_NE(all.find("(100000 bytes)"), std::string::npos) << all;
}

TEST(ConfigEnv, FreeTextHasALengthLimit) {
  std::string at_limit = "T_OUT=" + std::string(kMaxStringBytes, 'd');
  std::string over = "T_OUT=" + std::string(kMaxStringBytes + 1, 'd');
  std::vector<char*> ok_env = {at_limit.data(), nullptr};
  ParseResult ok = parse_env(kSpecs, "T_", ok_env.data());
  EXPECT_TRUE(ok.errors.empty());
  EXPECT_EQ(ok.values.get_string("T_OUT").size(), kMaxStringBytes);
  std::vector<char*> bad_env = {over.data(), nullptr};
  ParseResult bad = parse_env(kSpecs, "T_", bad_env.data());
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_NE(bad.errors[0].find("(4097 bytes): longer than 4096 bytes; using the default traces"),
            std::string::npos)
      << bad.errors[0];
  EXPECT_EQ(bad.values.get_string("T_OUT"), "traces");
}

TEST(ConfigEnv, DumpJsonAndMarkdownListEveryOption) {
  ParseResult r = parse_env(kSpecs, "T_", nullptr);
  std::string dumped = dump(kSpecs, r.values);
  std::string json = to_json(kSpecs, r.values);
  std::string md = markdown_table(kSpecs);
  for (const auto& s : kSpecs) {
    EXPECT_NE(dumped.find(s.name), std::string::npos);
    EXPECT_NE(json.find(s.name), std::string::npos);
    EXPECT_NE(md.find(s.name), std::string::npos);
  }
  EXPECT_NE(md.find("[0, 10]"), std::string::npos) << md;
}

}  // namespace
}  // namespace ringside::config
