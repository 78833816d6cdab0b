// Built against the installed package: find_package(ember) + ember::ember. Uses every layer: tensors,
// autograd, nn, optim and data (SentencePiece included).
#include <ember/ember.h>

#include <iostream>
#include <string>

// A user's own names beside Ember's: ember.h pulls in no fmt or spdlog, so a function called `fmt` is
// the user's alone, and ember::log is the math function.
std::string fmt(double v) { return std::to_string(v); }

int main() {
  using namespace ember;
  Tensor x = arange(12, {.dtype = DType::f64}).reshape({3, 4});
  Tensor y = matmul(x, x.t());  // [3, 3]
  const double log_e = log(full({1}, 2.718281828459045, {.dtype = DType::f64})).item<double>();
  const double trace = y.select(0, 0).select(0, 0).item<double>() + y.select(0, 1).select(0, 1).item<double>() +
                       y.select(0, 2).select(0, 2).item<double>();

  // Fit y = 2x - 1 with a Linear layer fed by a DataLoader.
  Generator gen(0);
  const Tensor inputs = randn({64, 1}, {}, &gen);
  auto ds = std::make_shared<data::TensorDataset>(inputs, inputs * 2.0f - 1.0f);
  data::DataLoader loader(ds, {.batch_size = 16, .shuffle = true});
  nn::Linear fit(1, 1, true, &gen);
  optim::SGD opt(fit.parameters(), {.lr = 0.1});
  for (int epoch = 0; epoch < 50; ++epoch)
    for (auto& batch : loader) {
      opt.zero_grad();
      nn::functional::mse_loss(fit.forward(batch.input), batch.target).backward();
      opt.step();
    }
  const double w = fit.weight.item<double>(), b = fit.bias.item<double>();
  // A SentencePiece tokenizer: the installed module libember_sentencepiece.so does the work.
  data::TextCorpus corpus;
  corpus.text = "the cat sat on the mat\nthe dog sat on the log\n";
  const data::Tokenizer spm = data::Tokenizer::sentencepiece(corpus, {.vocab_size = 20, .byte_fallback = false});
  const bool round_trip = spm.decode(spm.encode(corpus.text)) == corpus.text;
  std::cout << "consumer: ember works; log(e) = " << fmt(log_e) << "; trace(x x^T) = " << trace << " (expected 506); fitted y = " << w << "x + "
            << b << " (expected 2x - 1); sentencepiece " << spm.encode(corpus.text).size() << " tokens, "
            << (round_trip ? "round trip" : "NO round trip") << "\n";
  return std::abs(log_e - 1) < 1e-15 && trace == 506.0 && std::abs(w - 2) < 1e-3 && std::abs(b + 1) < 1e-3 &&
                 round_trip
             ? 0
             : 1;
}
