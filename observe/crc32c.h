#pragma once
// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected: 0x82F63B78), as TFRecord files checksum their
// records. No Debian package offers it as a library (libcrc32c-dev is absent from bookworm), so it is a
// table of 256 entries here; checked against RFC 3720 B.4's vectors in tests/test_tensorboard.cpp.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ember::observe {

// The CRC-32C of `n` bytes at `data`: crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void* data, size_t n);
inline uint32_t crc32c(std::string_view bytes) { return crc32c(bytes.data(), bytes.size()); }

// TFRecord's masked CRC (rotate right by 15, add 0xA282EAD8): a CRC stored next to data that itself
// holds CRCs would otherwise check trivially.
inline uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

}  // namespace ember::observe
