#pragma once
// The math both backends share, as one include for code that wants all of it. Each job has its header
// (include the one you use):
//   scalar_math.h       m_exp, m_log, ... (float/double overloads of the C math library), m_max/m_min
//   elementwise_math.h  the element-wise ops' functors (one per line of elementwise_ops.h), param_cast
//   reduce_math.h       reductions, argmax/argmin, cumsum and sort: accumulators and per-output bodies
//   optimizer_math.h    the fused optimizer updates (OptimizerStep)
//   random_math.h       Philox draws (random_element, RandomFill)
//   dispatch.h          runtime enum / (op, dtype) → template arguments, with the tables' dtype rules
// and, per family of fused ops, nn_math.h, attention_math.h, rnn_math.h; the operand checks of every
// backend entry are checks.h.
#include "backends/dispatch.h"
#include "backends/elementwise_math.h"
#include "backends/optimizer_math.h"
#include "backends/random_math.h"
#include "backends/reduce_math.h"
#include "backends/scalar_math.h"
