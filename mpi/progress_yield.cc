#include "mpi/progress_yield.h"

#include <dlfcn.h>

namespace ranktune::mpi {

namespace {

using SetYield = bool (*)(bool);  // opal/runtime/opal_progress.h: returns the previous value

SetYield set_yield() {
  static const SetYield f = reinterpret_cast<SetYield>(::dlsym(RTLD_DEFAULT, "opal_progress_set_yield_when_idle"));
  return f;
}

}  // namespace

bool ProgressYield::available() { return set_yield() != nullptr; }

ProgressYield::ProgressYield(bool yield) {
  if (const SetYield f = set_yield()) before_ = f(yield);
}

ProgressYield::~ProgressYield() {
  if (const SetYield f = set_yield()) f(before_);
}

}  // namespace ranktune::mpi
