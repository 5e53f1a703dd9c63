// SseParser: incremental Server-Sent Events parser (WHATWG event-stream framing).
//
// Feed() takes bytes exactly as they arrive from the socket (events may be split
// anywhere, several may arrive at once) and calls the callback once per dispatched
// event with its data lines joined by '\n'. Comment lines (": ping") and fields other
// than "data" are skipped; CRLF, LF and CR line endings are accepted. An event is
// stamped with the receive time of the bytes that completed it. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace hone::net {

class SseParser {
 public:
  using Callback = std::function<void(std::string_view data, int64_t recv_ns)>;
  explicit SseParser(Callback on_event, size_t max_event_bytes = 16 << 20)
      : on_event_(std::move(on_event)), max_event_bytes_(max_event_bytes) {}

  // Returns false once the stream is malformed (an event larger than the limit);
  // further input is ignored.
  bool Feed(std::string_view bytes, int64_t recv_ns);
  // True when bytes of an unfinished event are pending (a truncated stream).
  bool HasPartialEvent() const { return !line_.empty() || has_data_; }
  bool malformed() const { return malformed_; }
  uint64_t comments() const { return comments_; }

 private:
  void Line(std::string_view line, int64_t recv_ns);

  Callback on_event_;
  size_t max_event_bytes_;
  std::string line_;   // partial line carried across Feed() calls
  std::string data_;   // data of the event being assembled
  bool has_data_ = false;
  bool last_was_cr_ = false;
  bool malformed_ = false;
  uint64_t comments_ = 0;
};

}  // namespace hone::net
