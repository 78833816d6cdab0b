// Built against the installed package where Ember was built with ONNX export: find_package(ember) +
// ember::onnx. Exports a small CNN and checks what the exporter reports.
#include <ember/ember.h>
#include <ember/onnx/export.h>

#include <filesystem>
#include <iostream>

int main() {
  using namespace ember;
  Generator gen(0);
  nn::Sequential model;
  model.push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3).padding(1), &gen));
  model.push_back(std::make_shared<nn::ReLU>());
  model.push_back(std::make_shared<nn::Flatten>());
  model.push_back(std::make_shared<nn::Linear>(4 * 8 * 8, 10, true, &gen));
  const Tensor x = randn({2, 1, 8, 8}, {}, &gen);
  const auto path = std::filesystem::temp_directory_path() / "ember_consumer_model.onnx";
  const onnx::ExportResult r = onnx::export_module(model, x, path.string());
  const bool ok = std::filesystem::file_size(path) > 4 * 4 * 9 * 4 && r.output.shape() == Shape{2, 10} &&
                  r.initializers.size() == 4;
  std::cout << "consumer: ONNX export works; " << r.nodes << " nodes, " << r.initializers.size() << " initializers, "
            << std::filesystem::file_size(path) << " bytes\n";
  std::filesystem::remove(path);
  return ok ? 0 : 1;
}
