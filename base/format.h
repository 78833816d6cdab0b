#pragma once
// Numbers as text, written once for every layer: memory sizes in messages, logs and tables, and doubles
// that must read back exactly (metrics, checkpoint metadata).
//
//   format_mib(43'200'000)       → "41.2 MiB"
//   format_bytes(1572864)        → "1.50 MiB (1572864 bytes)"
//   format_shortest(0.1)         → "0.1"
#include <cstddef>
#include <string>

namespace ember {

inline constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// `bytes` in mebibytes with `decimals` digits after the point and the unit: "41.2 MiB".
std::string format_mib(double bytes, int decimals = 1);

// `bytes` in the largest binary unit that keeps the value at least 1 (KiB … TiB, two decimals) and the
// exact count: "1.50 GiB (1610612736 bytes)"; below 1 KiB just "512 bytes". For out-of-memory messages.
std::string format_bytes(size_t bytes);

// The shortest decimal text that reads back to the same double (std::to_chars): "0.1", "1e-04", "inf",
// "-inf"; every NaN is "nan" (to_chars would print a negative one as "-nan").
std::string format_shortest(double v);

}  // namespace ember
