// sys/printable.h: text from a trial shown on a terminal, its control characters visible.
#include "sys/printable.h"

#include <gtest/gtest.h>

namespace ranktune::sys {
namespace {

TEST(Printable, ShowsControlsAndKeepsText) {
  EXPECT_EQ(printable("loss"), "loss");
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("title\x1b]0;pwned\x07"), "title\\x1b]0;pwned\\x07");
  EXPECT_EQ(printable(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
  // Lines and tabs: escaped in one line, kept in a log tail; a carriage return never kept.
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\x0ab\\x09c\\x0dd");
  EXPECT_EQ(printable("a\nb\tc\rd", Lines::Keep), "a\nb\tc\\x0dd");
  // C1 controls as UTF-8 (CSI is U+009B), and bytes that are not UTF-8.
  EXPECT_EQ(printable("c1 \xc2\x9b" "2J"), "c1 \\u009b2J");
  EXPECT_EQ(printable("lone \xff and \xc3"), "lone \\xff and \\xc3");
  EXPECT_EQ(printable("overlong \xc0\xaf"), "overlong \\xc0\\xaf");
  EXPECT_EQ(printable("surrogate \xed\xa0\x80"), "surrogate \\xed\\xa0\\x80");
  // Other UTF-8 passes: names in any script, U+00A0 and above, 4-byte characters.
  EXPECT_EQ(printable("Genauigkeit \xc3\xa4 \xe7\xb2\xbe\xe5\xba\xa6 \xc2\xa0 \xf0\x9f\x93\x88"),
            "Genauigkeit \xc3\xa4 \xe7\xb2\xbe\xe5\xba\xa6 \xc2\xa0 \xf0\x9f\x93\x88");
  EXPECT_EQ(printable("C:\\path"), "C:\\path");
}

TEST(Printable, JsonKeepsItsMeaning) {
  EXPECT_EQ(printable_json("{\"m\": \"c1 \xc2\x9b" "2J \xc3\xa4\"}"), "{\"m\": \"c1 \\u009b2J \xc3\xa4\"}");
  EXPECT_EQ(printable_json("{\"m\": \"\\u001b[2J\"}"), "{\"m\": \"\\u001b[2J\"}");
}

}  // namespace
}  // namespace ranktune::sys
