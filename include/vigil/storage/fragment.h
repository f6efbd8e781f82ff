// Fragment files: immutable columnar data files under `data/<uuid>.frag`.
//
// Layout: magic "VGLFRAG1", then column blocks of up to rows_per_block rows,
// then a footer (field ids and types, row count, and per column per block:
// offset, stored size, decoded size, encoding, checksum), the footer length,
// the footer checksum and the trailing magic. Every block and the footer are
// checksummed; any defect reads as Corruption. Blocks are zstd-compressed when
// that saves space; vector blocks are stored raw.
//
// Thread safety: FragmentWriter is single-threaded. FragmentReader and
// BlockCache are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vigil/common/file_system.h"
#include "vigil/common/lru_cache.h"
#include "vigil/common/status.h"
#include "vigil/storage/column.h"
#include "vigil/storage/schema.h"

namespace vigil {

struct FragmentWriterOptions {
  uint32_t rows_per_block = 16384;
  int zstd_level = 1;
};

// What Finish() wrote.
struct FragmentFileInfo {
  uint64_t num_rows = 0;
  uint64_t file_size = 0;
  uint64_t footer_checksum = 0;
};

class FragmentWriter {
 public:
  // Creates `path` (must not exist). Columns are written for every field of `schema`.
  static Result<std::unique_ptr<FragmentWriter>> Create(FileSystem* fs, const std::string& path, SchemaPtr schema,
                                                        FragmentWriterOptions options = {});
  virtual ~FragmentWriter() = default;
  // Appends rows; the batch's columns must match the schema. Buffers at most one block per column.
  virtual Status Write(const RecordBatch& batch) = 0;
  // Flushes, writes the footer, fsyncs and closes the file.
  virtual Result<FragmentFileInfo> Finish() = 0;
  virtual uint64_t rows_written() const = 0;
};

// Decoded blocks shared by every reader in the process, LRU by bytes (each charged its
// column's memory, its key and the entry).
class BlockCache {
 public:
  explicit BlockCache(size_t capacity_bytes) : cache_(capacity_bytes) {}
  // The process-wide cache: StorageConfig's default size until a process sizes it by its
  // root's [storage] block_cache_bytes (sql::Session::Open does).
  static BlockCache* Default();

  std::shared_ptr<const Column> Lookup(const std::string& key) { return cache_.Get(key); }
  void Insert(const std::string& key, std::shared_ptr<const Column> column);
  void Erase(const std::string& key) { cache_.Erase(key); }
  size_t usage_bytes() const { return cache_.usage_bytes(); }
  size_t capacity_bytes() const { return cache_.capacity_bytes(); }
  // Bounds the cache anew; the least recently used blocks go until the rest fits.
  void SetCapacity(size_t capacity_bytes) { cache_.SetCapacity(capacity_bytes); }

 private:
  LruCache<std::string, Column> cache_;
};

class FragmentReader {
 public:
  // Opens and verifies the footer. `cache` may be null (no caching).
  static Result<std::shared_ptr<FragmentReader>> Open(FileSystem* fs, const std::string& path,
                                                      BlockCache* cache = BlockCache::Default());
  virtual ~FragmentReader() = default;

  virtual uint64_t num_rows() const = 0;
  virtual uint32_t rows_per_block() const = 0;
  virtual size_t num_blocks() const = 0;
  virtual const std::string& path() const = 0;
  // Field ids stored in this file, with their types.
  virtual const std::vector<Field>& fields() const = 0;

  // One decoded, checksum-verified block of a column (through the cache).
  // NotFound if the file has no such field; InvalidArgument for a bad block index.
  virtual Result<std::shared_ptr<const Column>> ReadBlock(int32_t field_id, size_t block) const = 0;
  // A whole column, concatenated.
  virtual Result<Column> ReadColumn(int32_t field_id) const = 0;
  // The values of `field_ids` at row `offset`.
  virtual Result<std::vector<Value>> ReadRow(uint32_t offset, const std::vector<int32_t>& field_ids) const = 0;
};

}  // namespace vigil
