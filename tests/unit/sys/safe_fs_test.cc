// sys/safe_fs: the rules for files beside a results file (links, FIFOs, foreign folders).
#include "sys/safe_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/unit/common/expect_text.h"

namespace fs = std::filesystem;
using namespace ranktune::sys;

namespace {

class SafeFs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "safe_fs_XXXXXX").string();
    ASSERT_NE(::mkdtemp(t.data()), nullptr);
    dir_ = t;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
};

std::string contents(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

OpenOptions append_create() {
  OpenOptions o;
  o.access = O_WRONLY;
  o.append = true;
  o.create = Create::IfMissing;
  return o;
}

/// What `open` threw, or "opened" when it did not refuse.
template <class F>
std::string refusal(F open) {
  try {
    open();
  } catch (const FsError& e) {
    return e.what();
  }
  return "opened";
}

}  // namespace

TEST_F(SafeFs, CreatesAndReopensARegularFile) {
  {
    UniqueFd fd = open_file(path("a.log"), append_create());
    ASSERT_EQ(::write(fd.get(), "one\n", 4), 4);
  }
  UniqueFd fd = open_file(path("a.log"), append_create());
  ASSERT_EQ(::write(fd.get(), "two\n", 4), 4);
  EXPECT_EQ(contents(path("a.log")), "one\ntwo\n");
}

TEST_F(SafeFs, RefusesASymlinkAndLeavesItsTargetAlone) {
  std::ofstream(path("victim")) << "precious";
  fs::create_symlink(path("victim"), path("a.log"));
  OpenOptions o = append_create();
  o.truncate = true;
  EXPECT_CONTAINS(refusal([&] { open_file(path("a.log"), o); }), "symbolic link");
  EXPECT_EQ(contents(path("victim")), "precious");
}

TEST_F(SafeFs, RefusesAFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path("control").c_str(), 0600), 0);
  OpenOptions o;
  o.access = O_RDONLY;
  EXPECT_CONTAINS(refusal([&] { open_file(path("control"), o); }), "a FIFO");
}

TEST_F(SafeFs, RefusesAHardLinkAndAnOpenModeWhenAsked) {
  std::ofstream(path("victim")) << "precious";
  ASSERT_EQ(::link(path("victim").c_str(), path("a.log").c_str()), 0);
  EXPECT_CONTAINS(refusal([&] { open_file(path("a.log"), append_create()); }), "hard links");
  std::ofstream(path("shared")) << "x";
  fs::permissions(path("shared"), fs::perms(0666));
  OpenOptions o = append_create();
  o.forbidden_bits = 077;
  EXPECT_CONTAINS(refusal([&] { open_file(path("shared"), o); }), "has mode 0666, which lets other users change it");
}

TEST_F(SafeFs, ExclusiveRefusesAnExistingFile) {
  std::ofstream(path("x")) << "";
  OpenOptions o = append_create();
  o.create = Create::Exclusive;
  EXPECT_THROW(open_file(path("x"), o), FsError);
}

TEST_F(SafeFs, PrivateDirectoryRefusesLinksAndOpenFolders) {
  UniqueFd made = make_private_directory(path("logs"));
  EXPECT_TRUE(made);
  EXPECT_TRUE(make_private_directory(path("logs")));  // ours: accepted again
  fs::create_directory(path("elsewhere"));
  fs::create_directory_symlink(path("elsewhere"), path("linked"));
  EXPECT_CONTAINS(refusal([&] { make_private_directory(path("linked")); }), "symbolic link");
  fs::create_directory(path("open"));
  fs::permissions(path("open"), fs::perms(0777));
  EXPECT_CONTAINS(refusal([&] { make_private_directory(path("open")); }), "writable by other users");
}

TEST_F(SafeFs, OwnDirectoryRefusesALinkAndTakesAFolderOpenToOthers) {
  EXPECT_TRUE(make_own_directory(path("plots")));
  EXPECT_TRUE(make_own_directory(path("plots/")));  // ours: accepted again, with a trailing slash
  fs::create_directory(path("elsewhere"));
  fs::create_directory_symlink(path("elsewhere"), path("linked"));
  EXPECT_CONTAINS(refusal([&] { make_own_directory(path("linked")); }), "symbolic link");
  // "linked/" would have open(2) follow the link: refused the same.
  EXPECT_CONTAINS(refusal([&] { make_own_directory(path("linked/")); }), "symbolic link");
  EXPECT_CONTAINS(refusal([&] { make_private_directory(path("linked/")); }), "symbolic link");
  // Files go into it by replace_file_at, so others' write permission is no way in.
  fs::create_directory(path("open"));
  fs::permissions(path("open"), fs::perms(0777));
  EXPECT_TRUE(make_own_directory(path("open")));
}

TEST_F(SafeFs, ReplaceFileAtWritesIntoTheFolderOpened) {
  UniqueFd folder = make_own_directory(path("plots"));
  std::ofstream(path("victim")) << "precious";
  fs::create_symlink(path("victim"), path("plots/curves.svg"));
  replace_file_at(folder.get(), "curves.svg", "<svg/>", path("plots/curves.svg"), 0600);
  EXPECT_FALSE(fs::is_symlink(path("plots/curves.svg")));
  EXPECT_EQ(contents(path("plots/curves.svg")), "<svg/>");
  EXPECT_EQ(contents(path("victim")), "precious");
  struct stat st {};
  ASSERT_EQ(::stat(path("plots/curves.svg").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The folder renamed away after it was opened: the file goes where the descriptor points.
  fs::rename(path("plots"), path("moved"));
  replace_file_at(folder.get(), "more.svg", "x", path("plots/more.svg"));
  EXPECT_EQ(contents(path("moved/more.svg")), "x");
  EXPECT_FALSE(fs::exists(path("plots")));
  // A folder at the name is not replaced.
  fs::create_directory(path("moved/dir.svg"));
  EXPECT_CONTAINS(refusal([&] { replace_file_at(folder.get(), "dir.svg", "x", path("moved/dir.svg")); }),
                  "it is a folder");
}

TEST(SplitPath, FolderAndName) {
  EXPECT_EQ(split_path("a.log"), std::make_pair(std::string("."), std::string("a.log")));
  EXPECT_EQ(split_path("/x/y/a.log"), std::make_pair(std::string("/x/y"), std::string("a.log")));
  EXPECT_EQ(split_path("/a"), std::make_pair(std::string("/"), std::string("a")));
}

TEST_F(SafeFs, ReplaceFileIsAtomicAndFollowsNoLink) {
  replace_file(path("page.html"), "one");
  EXPECT_EQ(contents(path("page.html")), "one");
  replace_file(path("page.html"), "two");
  EXPECT_EQ(contents(path("page.html")), "two");
  // A link planted at the page's name is replaced, its target left alone.
  std::ofstream(path("victim")) << "precious";
  fs::remove(path("page.html"));
  fs::create_symlink(path("victim"), path("page.html"));
  replace_file(path("page.html"), "three");
  EXPECT_FALSE(fs::is_symlink(path("page.html")));
  EXPECT_EQ(contents(path("page.html")), "three");
  EXPECT_EQ(contents(path("victim")), "precious");
  // No temporary file is left.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(path(""))) files += e.path().filename().string().rfind(".page.html.tmp", 0) == 0;
  EXPECT_EQ(files, 0u);
  EXPECT_CONTAINS(refusal([&] { replace_file(path("no/such/folder/page.html"), "x"); }), "cannot open the folder");
}
