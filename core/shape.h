#pragma once
// Shape: a small inline vector of dimension sizes (or strides, or dims), at most kMaxDims long, so that
// creating a tensor or a view never heap-allocates for its metadata.
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace ember {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(std::span<const int64_t> dims) { assign(dims.begin(), dims.end()); }
  Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }  // NOLINT: implicit on purpose

  // A shape of `n` dims, each `value`.
  static Shape filled(int n, int64_t value) {
    Shape s;
    s.resize(n, value);
    return s;
  }

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t& operator[](int i) { return d_[i]; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t* begin() { return d_; }
  int64_t* end() { return d_ + n_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  const int64_t* data() const { return d_; }
  int64_t back() const { return d_[n_ - 1]; }

  void push_back(int64_t v) {
    check_capacity(n_ + 1);
    d_[n_++] = v;
  }
  void insert(int pos, int64_t v) {
    check_capacity(n_ + 1);
    std::copy_backward(d_ + pos, d_ + n_, d_ + n_ + 1);
    d_[pos] = v;
    ++n_;
  }
  void erase(int pos) {
    std::copy(d_ + pos + 1, d_ + n_, d_ + pos);
    --n_;
  }
  void resize(int n, int64_t value = 0) {
    check_capacity(n);
    for (int i = n_; i < n; ++i) d_[i] = value;
    n_ = n;
  }

  // Product of the sizes (1 for a 0-d shape).
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < n_; ++i) n *= d_[i];
    return n;
  }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  std::string str() const;  // "[2, 3]"

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  template <typename It>
  void assign(It first, It last) {
    check_capacity(static_cast<int>(last - first));
    n_ = 0;
    for (; first != last; ++first) d_[n_++] = *first;
  }
  static void check_capacity(int n) {
    EMBER_CHECK(n <= kMaxDims, "Shape: ", n, " dims requested; Ember supports at most ", kMaxDims,
                " dims per tensor");
  }

  int64_t d_[kMaxDims] = {};
  int n_ = 0;
};

inline std::ostream& operator<<(std::ostream& out, const Shape& s) { return out << s.str(); }

// Row-major (C-order) strides for `shape`.
Shape contiguous_strides(const Shape& shape);

// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int wrap_dim(int64_t dim, int ndim, const char* op);

// An integer dim (int, int64_t, ...) but not bool: the type of the single-dim overloads (`sum(x, 1)` is
// `sum(x, {1})`), so that a bool there — a misplaced keepdim, `sum(x, true)` — does not compile.
template <typename I>
concept DimIndex = std::integral<I> && !std::same_as<I, bool>;

}  // namespace ember
