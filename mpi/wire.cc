#include "mpi/wire.h"

#include <cstring>

#include <boost/mpi/packed_iarchive.hpp>
#include <boost/mpi/packed_oarchive.hpp>

#include "mpi/backoff.h"
#include "mpi/errors.h"

namespace ranktune::mpi {

template <class T>
void send(const boost::mpi::communicator& comm, int dest, Tag tag, const T& msg) {
  boost::mpi::packed_oarchive oa(comm);
  oa << msg;
  MPI_CHECK(MPI_Send(const_cast<void*>(oa.address()), static_cast<int>(oa.size()), MPI_PACKED,
                     dest, tag, static_cast<MPI_Comm>(comm)));
}

std::optional<Incoming> try_receive(const boost::mpi::communicator& comm, int source) {
  int flag = 0;
  MPI_Message handle = MPI_MESSAGE_NULL;
  MPI_Status status;
  // A matched probe: the message found is the one received, even if another thread or a
  // later probe looks at the same source (plain probe + recv has no such guarantee).
  MPI_CHECK(MPI_Improbe(source, MPI_ANY_TAG, static_cast<MPI_Comm>(comm), &flag, &handle, &status));
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_CHECK(MPI_Get_count(&status, MPI_PACKED, &count));
  Incoming in;
  in.source = status.MPI_SOURCE;
  in.tag = status.MPI_TAG;
  in.bytes.resize(static_cast<std::size_t>(count));
  MPI_CHECK(MPI_Mrecv(in.bytes.data(), count, MPI_PACKED, &handle, MPI_STATUS_IGNORE));
  return in;
}

Incoming receive(const boost::mpi::communicator& comm, int source, std::chrono::microseconds max_nap) {
  Backoff backoff(std::chrono::microseconds(10), max_nap);
  for (;;) {
    if (auto in = try_receive(comm, source)) return std::move(*in);
    backoff.wait();
  }
}

template <class T>
T unpack(const boost::mpi::communicator& comm, const Incoming& in) {
  boost::mpi::packed_iarchive ia(comm);
  ia.resize(in.bytes.size());
  std::memcpy(ia.address(), in.bytes.data(), in.bytes.size());
  T msg;
  ia >> msg;
  return msg;
}

#define RANKTUNE_WIRE_TYPE(T)                                                       \
  template void send<T>(const boost::mpi::communicator&, int, Tag, const T&);       \
  template T unpack<T>(const boost::mpi::communicator&, const Incoming&);
RANKTUNE_WIRE_TYPE(Setup)
RANKTUNE_WIRE_TYPE(Hello)
RANKTUNE_WIRE_TYPE(Start)
RANKTUNE_WIRE_TYPE(Decision)
RANKTUNE_WIRE_TYPE(Result)
RANKTUNE_WIRE_TYPE(Ended)
RANKTUNE_WIRE_TYPE(Checkpoint)
RANKTUNE_WIRE_TYPE(Placed)
RANKTUNE_WIRE_TYPE(Empty)
#undef RANKTUNE_WIRE_TYPE

}  // namespace ranktune::mpi
