# The installed, public headers of Ember: what a program built against the package may include. Everything
# else (the backends' kernels and loops, base/log.h with spdlog, the thread pool, core/raw.h, the TensorBoard
# record writer, the ONNX graph builder, ...) is internal: not installed, and never reachable from a header
# on this list (tests/check_public_headers.cmake fails the day one is; each header here also compiles alone).
# The Backend interface (backends/backend.h) is public: docs/architecture.md presents it as the way to add a
# backend, and set_backend_override takes one. backends/cuda_info.h is ember::cuda (torch.cuda's is_available,
# device_count, memory statistics): plain C++, no CUDA header.
set(EMBER_PUBLIC_HEADERS
  include/ember/ember.h
  base/device.h base/dtype.h base/error.h base/host_device.h base/philox.h
  backends/backend.h backends/cuda_info.h backends/elementwise_ops.h
  core/atomic_file.h core/checkpoint.h core/generator.h core/named_tensors.h core/safetensors.h core/shape.h
  core/storage.h core/tensor.h
  autograd/grad_mode.h autograd/gradcheck.h autograd/hooks.h autograd/node.h autograd/ops.h
  nn/causal_lm.h nn/functional.h nn/generation.h nn/init.h nn/layers.h nn/module.h nn/options.h nn/registry.h
  nn/resnet.h nn/rnn.h nn/serialize.h nn/transformer.h
  nn/vit.h
  optim/optimizer.h optim/options.h optim/param_groups.h optim/scheduler.h
  data/collate.h data/csv.h data/data.h data/dataset.h data/idx.h data/image_decode.h data/image_folder.h
  data/image_transforms.h data/loader.h data/random.h data/shard.h data/text.h data/transforms.h
  distributed/ddp.h distributed/distributed.h distributed/launch.h distributed/process_group.h
  observe/histogram.h observe/summary_writer.h)
# ember::onnx's API, installed where Ember has ONNX export (its graph builder's headers stay internal).
set(EMBER_PUBLIC_ONNX_HEADERS onnx/export.h)
