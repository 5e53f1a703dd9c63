#include "net/sse.h"

namespace hone::net {

bool SseParser::Feed(std::string_view bytes, int64_t recv_ns) {
  if (malformed_) return false;
  size_t i = 0;
  // A CRLF split across reads: the LF that starts this read ends nothing new.
  if (last_was_cr_ && !bytes.empty() && bytes[0] == '\n') i = 1;
  last_was_cr_ = false;
  while (i < bytes.size()) {
    size_t j = i;
    while (j < bytes.size() && bytes[j] != '\n' && bytes[j] != '\r') ++j;
    if (j == bytes.size()) {
      line_.append(bytes.substr(i));
      if (line_.size() + data_.size() > max_event_bytes_) {
        malformed_ = true;
        return false;
      }
      return true;
    }
    if (line_.empty()) {
      Line(bytes.substr(i, j - i), recv_ns);
    } else {
      line_.append(bytes.substr(i, j - i));
      std::string line;
      line.swap(line_);
      Line(line, recv_ns);
    }
    if (malformed_) return false;
    if (bytes[j] == '\r') {
      if (j + 1 < bytes.size()) {
        if (bytes[j + 1] == '\n') ++j;
      } else {
        last_was_cr_ = true;
      }
    }
    i = j + 1;
  }
  return true;
}

void SseParser::Line(std::string_view line, int64_t recv_ns) {
  if (line.empty()) {
    if (has_data_) {
      on_event_(data_, recv_ns);
      data_.clear();
      has_data_ = false;
    }
    return;
  }
  if (line[0] == ':') {
    ++comments_;
    return;
  }
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
    if (data_.size() > max_event_bytes_) malformed_ = true;
  }
  // event:, id:, retry: and unknown fields carry nothing hone needs.
}

}  // namespace hone::net
