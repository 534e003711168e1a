// The compiled-library (ETS_COMPILED_LIB) home of every header-only definition: each *-inl.hpp is built once here.
// Importers, model I/O, trainer and the C ABI have their own translation units under src/.
#ifndef ETS_COMPILED_LIB
#error "src/ets.cpp is only built as part of ets::ets"
#endif

#include "ets/error-inl.hpp"
#include "ets/log-inl.hpp"
#include "ets/trace-inl.hpp"
#include "ets/cuda/cudnn_weight_slice-inl.hpp"
#include "ets/detail/cpu_lstm-inl.hpp"
#include "ets/bilstm_predictor-inl.hpp"
#include "ets/feature_spec-inl.hpp"
#include "ets/window_encoder-inl.hpp"
#include "ets/aggregator-inl.hpp"
#include "ets/tracer-inl.hpp"
