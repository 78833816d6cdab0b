// Built against the installed package: find_package(ember) + ember::ember.
#include <ember/ember.h>

#include <iostream>

int main() {
  using namespace ember;
  Tensor x = arange(12, {.dtype = DType::f64}).reshape({3, 4});
  Tensor y = matmul(x, x.t());  // [3, 3]
  const double trace = y.select(0, 0).select(0, 0).item<double>() + y.select(0, 1).select(0, 1).item<double>() +
                       y.select(0, 2).select(0, 2).item<double>();
  std::cout << "consumer: ember works; trace(x x^T) = " << trace << " (expected 506)\n";
  return trace == 506.0 ? 0 : 1;
}
