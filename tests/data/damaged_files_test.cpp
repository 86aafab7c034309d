// Damaged copies of valid dataset files (tests/lib/byte_mutations.h): each reader reads a damaged
// copy or refuses it with a UserError naming the problem. Where the format carries a checksum
// (gzip's CRC-32) a copy it reads must hold exactly the original values.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "jpeg_test_util.h"
#include "lib/byte_mutations.h"
#include "lpdt/data/ag_news_reader.h"
#include "lpdt/data/cifar_reader.h"
#include "lpdt/data/idx_reader.h"
#include "lpdt/data/jpeg_decoder.h"
#include "lpdt/data/sentlen_reader.h"
#include "lpdt/data/wordpiece_tokenizer.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using mutation_testing::Bytes;
using mutation_testing::expect_damage_read_or_refused;
using testing::append_be32;
using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

constexpr int kTrials = 1500;

// An IDX file of `n` images of h x w random pixels (magic 0x803), or of n labels 0..9 (0x801).
Bytes idx_images(std::uint32_t n, std::uint32_t h, std::uint32_t w) {
  Bytes b;
  append_be32(b, 0x00000803);
  append_be32(b, n);
  append_be32(b, h);
  append_be32(b, w);
  std::mt19937 rng(7);
  for (std::uint32_t i = 0; i < n * h * w; ++i) b.push_back(static_cast<std::uint8_t>(rng()));
  return b;
}

Bytes idx_labels(std::uint32_t n) {
  Bytes b;
  append_be32(b, 0x00000801);
  append_be32(b, n);
  for (std::uint32_t i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

Bytes text_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

TEST(DamagedFiles, IdxImagesAndLabels) {
  TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte");
  const std::string labels = dir.file("train-labels-idx1-ubyte");
  const auto images_out = expect_damage_read_or_refused("IDX images", idx_images(6, 5, 4), kTrials,
                                                        1, [&](const Bytes& bytes) {
                                                          write_bytes(images, bytes);
                                                          read_idx_images(images, "fashion-mnist");
                                                        });
  const auto labels_out = expect_damage_read_or_refused("IDX labels", idx_labels(12), kTrials, 2,
                                                        [&](const Bytes& bytes) {
                                                          write_bytes(labels, bytes);
                                                          read_idx_labels(labels, "fashion-mnist");
                                                        });
  // The damage reaches the readers' checks (a header changed, the file cut or lengthened).
  EXPECT_GT(images_out.refused, kTrials / 4);
  EXPECT_GT(labels_out.refused, kTrials / 4);
}

// gzip ends with the CRC-32 and length of what it holds: a damaged .gz file the reader accepts
// must give exactly the original images (damage to the gzip header's time stamp or OS byte, say).
TEST(DamagedFiles, GzippedIdxImagesAreReadExactlyOrRefused) {
  TempDir dir;
  const std::string original_path = dir.file("original.gz");
  testing::write_gzip(original_path, idx_images(6, 5, 4));
  const torch::Tensor original = read_idx_images(original_path, "fashion-mnist");
  const std::string path = dir.file("train-images-idx3-ubyte.gz");
  int changed_but_read = 0;
  const auto out = expect_damage_read_or_refused(
      "gzipped IDX images", read_bytes(original_path), kTrials, 3, [&](const Bytes& bytes) {
        write_bytes(path, bytes);
        const torch::Tensor images = read_idx_images(path, "fashion-mnist");
        if (!images.sizes().equals(original.sizes()) || !torch::equal(images, original)) {
          ++changed_but_read;
        }
      });
  EXPECT_EQ(changed_but_read, 0) << "damaged gzip data read as other images";
  EXPECT_GT(out.refused, kTrials / 2);
}

// Decoding in memory, at full size and with DCT scaling, and reading the header alone: colour,
// grayscale, and colour with restart markers (their own resynchronisation path in libjpeg).
TEST(DamagedFiles, JpegImages) {
  const torch::Tensor smooth =
      (torch::arange(24 * 32, torch::kInt).reshape({1, 24, 32}) % 251).to(torch::kUInt8);
  const std::vector<std::pair<std::string, Bytes>> images = {
      {"colour JPEG",
       testing::encode_jpeg(torch::cat({smooth, smooth.flip(1), smooth.flip(2)}), 90)},
      {"grayscale JPEG", testing::encode_jpeg(smooth, 75)},
      {"JPEG with restart markers",
       testing::encode_jpeg(torch::cat({smooth, smooth, smooth.flip(2)}), 90, 1)},
  };
  std::uint64_t seed = 10;
  for (const auto& [what, valid] : images) {
    const auto out =
        expect_damage_read_or_refused(what, valid, kTrials, seed++, [&](const Bytes& b) {
          const JpegInfo info = read_jpeg_info(b.data(), b.size(), "image.jpg");
          EXPECT_GT(info.height * info.width, 0);
          const torch::Tensor full = decode_jpeg(b, "image.jpg");
          EXPECT_EQ(full.size(0), 3);
          decode_jpeg(b, "image.jpg", 8);
        });
    EXPECT_GT(out.refused, kTrials / 4) << what;
  }
}

// CIFAR's binary batches have no header: the damage that matters cuts or lengthens a file (no
// longer a whole number of records) or changes a label byte. A gzipped batch that is read holds
// exactly the original records.
TEST(DamagedFiles, CifarBatchesPlainAndGzipped) {
  TempDir dir;
  const auto batch = [](int records, int label_bytes) {
    Bytes b;
    for (int r = 0; r < records; ++r) {
      for (int l = 0; l < label_bytes; ++l) b.push_back(static_cast<std::uint8_t>((r + l) % 10));
      for (int i = 0; i < 3072; ++i) b.push_back(static_cast<std::uint8_t>((7 * i + r) % 256));
    }
    return b;
  };
  constexpr int kCifarTrials = 600;
  for (const char* sub : {"cifar10", "cifar10_gz", "cifar100"}) {
    std::filesystem::create_directories(dir.file(sub));
  }
  const std::string plain = dir.file("cifar10/test_batch.bin");
  const auto out10 = expect_damage_read_or_refused(
      "CIFAR-10 batch", batch(3, 1), kCifarTrials, 4, [&](const Bytes& bytes) {
        write_bytes(plain, bytes);
        load_cifar10(dir.file("cifar10"), Split::kTest);
      });
  EXPECT_GT(out10.refused, kCifarTrials / 10);

  const std::string original_gz = dir.file("original.gz");
  testing::write_gzip(original_gz, batch(3, 1));
  write_bytes(dir.file("cifar10_gz/test_batch.bin.gz"), read_bytes(original_gz));
  const Dataset original = load_cifar10(dir.file("cifar10_gz"), Split::kTest);
  int changed_but_read = 0;
  const auto out_gz = expect_damage_read_or_refused(
      "gzipped CIFAR-10 batch", read_bytes(original_gz), kCifarTrials, 5, [&](const Bytes& bytes) {
        write_bytes(dir.file("cifar10_gz/test_batch.bin.gz"), bytes);
        const Dataset read = load_cifar10(dir.file("cifar10_gz"), Split::kTest);
        if (!read.images.sizes().equals(original.images.sizes()) ||
            !torch::equal(read.images, original.images) ||
            !torch::equal(read.labels, original.labels)) {
          ++changed_but_read;
        }
      });
  EXPECT_EQ(changed_but_read, 0) << "damaged gzip data read as other records";
  EXPECT_GT(out_gz.refused, kCifarTrials / 2);

  const auto out100 = expect_damage_read_or_refused(
      "CIFAR-100 batch", batch(2, 2), kCifarTrials, 6, [&](const Bytes& bytes) {
        write_bytes(dir.file("cifar100/test.bin"), bytes);
        load_cifar100(dir.file("cifar100"), Split::kTest);
      });
  EXPECT_GT(out100.refused, kCifarTrials / 10);
}

TEST(DamagedFiles, AgNewsCsv) {
  TempDir dir;
  const std::string path = dir.file("train.csv");
  const Bytes valid = text_bytes(
      "\"3\",\"Wall St. Bears Claw Back\",\"Reuters - Short-sellers, \"\"the\"\" ultra-cynics.\"\n"
      "\"4\",\"Carlyle Looks\",\"Reuters - Private investment firm\\Carlyle Group.\"\n"
      "1,plain,\"two\nlines\"\r\n");
  const auto out =
      expect_damage_read_or_refused("AG News CSV", valid, kTrials, 20, [&](const Bytes& b) {
        write_bytes(path, b);
        read_ag_news_csv(path);
      });
  EXPECT_GT(out.refused, kTrials / 4);
}

TEST(DamagedFiles, SentLenProbingFile) {
  TempDir dir;
  const std::string path = dir.file("sentence_length.txt");
  const Bytes valid = text_bytes(
      "tr\t0\tone two three four five\n"
      "va\t1\ta b c d e f g h i\n"
      "te\t3\t" +
      std::string(60, 'w') +
      " x y z\r\n"
      "tr\t2\ts t u v w x y z a b c d e f\n");
  const auto out =
      expect_damage_read_or_refused("SentLen file", valid, kTrials, 21, [&](const Bytes& b) {
        write_bytes(path, b);
        read_sentlen(path, Split::kTrain);
        read_sentlen(path, Split::kTest, SentLenOptions().labels(SentLenLabels::kRecompute));
      });
  EXPECT_GT(out.refused, kTrials / 10);
}

TEST(DamagedFiles, WordPieceVocabulary) {
  TempDir dir;
  const std::string path = dir.file("vocab.txt");
  const Bytes valid =
      text_bytes("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n,\n.\nhello\n##lo\nworld\n\xC3\xA9t\xC3\xA9\n");
  const auto out =
      expect_damage_read_or_refused("vocab.txt", valid, kTrials, 22, [&](const Bytes& b) {
        write_bytes(path, b);
        const WordPieceTokenizer tokenizer = WordPieceTokenizer::from_file(path);
        tokenizer.encode("hello, world: the \xC3\xA9t\xC3\xA9 hellolo");
      });
  EXPECT_GT(out.refused, kTrials / 10);
}

}  // namespace
}  // namespace lpdt::data
