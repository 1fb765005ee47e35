// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "rdma/seam.hpp"

#include <cstdio>
#include <string>

namespace rcnet::rdma {

PostSendsResult Seam::post_sends(CmIdHandle id, std::span<const SendWr> wrs) {
  PostSendsResult r;
  for (const auto& w : wrs) {
    if (auto p = post_send(id, w.wr_id, w.sge, w.imm, w.signaled); !p) {
      r.error = p.error();
      return r;
    }
    ++r.posted;
  }
  return r;
}

std::string_view to_string(CmEventType t) {
  switch (t) {
    case CmEventType::kAddrResolved:
      return "ADDR_RESOLVED";
    case CmEventType::kAddrError:
      return "ADDR_ERROR";
    case CmEventType::kRouteResolved:
      return "ROUTE_RESOLVED";
    case CmEventType::kRouteError:
      return "ROUTE_ERROR";
    case CmEventType::kConnectRequest:
      return "CONNECT_REQUEST";
    case CmEventType::kConnectError:
      return "CONNECT_ERROR";
    case CmEventType::kUnreachable:
      return "UNREACHABLE";
    case CmEventType::kRejected:
      return "REJECTED";
    case CmEventType::kEstablished:
      return "ESTABLISHED";
    case CmEventType::kDisconnected:
      return "DISCONNECTED";
    case CmEventType::kDeviceRemoval:
      return "DEVICE_REMOVAL";
    case CmEventType::kTimewaitExit:
      return "TIMEWAIT_EXIT";
    case CmEventType::kAddrChange:
      return "ADDR_CHANGE";
    case CmEventType::kOther:
      break;
  }
  return "OTHER";
}

std::string_view to_string(AsyncEventType t) {
  switch (t) {
    case AsyncEventType::kQpFatal:
      return "QP_FATAL";
    case AsyncEventType::kQpReqErr:
      return "QP_REQ_ERR";
    case AsyncEventType::kQpAccessErr:
      return "QP_ACCESS_ERR";
    case AsyncEventType::kCommEstablished:
      return "COMM_EST";
    case AsyncEventType::kSqDrained:
      return "SQ_DRAINED";
    case AsyncEventType::kPathMigrated:
      return "PATH_MIG";
    case AsyncEventType::kLastWqeReached:
      return "QP_LAST_WQE_REACHED";
    case AsyncEventType::kSrqLimitReached:
      return "SRQ_LIMIT_REACHED";
    case AsyncEventType::kSrqErr:
      return "SRQ_ERR";
    case AsyncEventType::kCqErr:
      return "CQ_ERR";
    case AsyncEventType::kPortActive:
      return "PORT_ACTIVE";
    case AsyncEventType::kPortError:
      return "PORT_ERR";
    case AsyncEventType::kDeviceFatal:
      return "DEVICE_FATAL";
    case AsyncEventType::kOther:
      break;
  }
  return "OTHER";
}

std::string_view to_string(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess:
      return "SUCCESS";
    case WcStatus::kFlushErr:
      return "WR_FLUSH_ERR";
    case WcStatus::kRetryExceeded:
      return "RETRY_EXC_ERR";
    case WcStatus::kRnrRetryExceeded:
      return "RNR_RETRY_EXC_ERR";
    case WcStatus::kRemoteAccessErr:
      return "REM_ACCESS_ERR";
    case WcStatus::kRemoteOpErr:
      return "REM_OP_ERR";
    case WcStatus::kLocalLengthErr:
      return "LOC_LEN_ERR";
    case WcStatus::kLocalProtErr:
      return "LOC_PROT_ERR";
    case WcStatus::kOther:
      break;
  }
  return "OTHER";
}

std::string describe_status(const WorkCompletion& wc) {
  std::string out(to_string(wc.status));
  const bool raw = wc.status == WcStatus::kOther && (wc.raw_status != 0 || wc.raw_status_text);
  if (!raw && wc.vendor_err == 0)
    return out;
  out += " (";
  if (raw) {
    out += "ibv_wc_status " + std::to_string(wc.raw_status);
    if (wc.raw_status_text != nullptr)
      out += std::string(": ") + wc.raw_status_text;
    if (wc.vendor_err != 0)
      out += ", ";
  }
  if (wc.vendor_err != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%x", wc.vendor_err);
    out += std::string("vendor_err ") + hex;
  }
  return out + ")";
}

}  // namespace rcnet::rdma
