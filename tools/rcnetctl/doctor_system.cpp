// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rcnetctl doctor's checks of the system around rcnetd (doctor_checks.hpp):
// kernel modules, iwpmd, RLIMIT_MEMLOCK and the device nodes rcnetd opens.
#include "doctor_checks.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "cm/manager.hpp"

namespace rcnet::rcnetctl::doctor {

namespace fs = std::filesystem;

// Loaded: a line in /proc/modules, or built in (/sys/module/NAME without
// the initstate a loadable module has).
bool Doctor::module_loaded(const std::string& name) const {
  std::ifstream f(at_root("proc/modules"));
  for (std::string line; std::getline(f, line);) {
    if (line.starts_with(name + " "))
      return true;
  }
  std::error_code ec;
  return fs::is_directory(at_root("sys/module/" + name), ec) &&
         !fs::exists(at_root("sys/module/" + name + "/initstate"), ec);
}

void Doctor::check_module(const std::string& name, const std::string& why, int rail) {
  if (module_loaded(name)) {
    add(kModule, Status::kPass, name + " loaded" + why, {}, rail);
    return;
  }
  add(kModule, Status::kFail, name + " is not loaded" + why,
      "modprobe " + name + ", and to load it at boot: echo " + name +
          " >> /etc/modules-load.d/rcnet.conf",
      rail);
}

void Doctor::check_iwpmd(std::size_t k) {
  const int rail = static_cast<int>(k);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(at_root("proc"), ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (read("proc/" + pid + "/comm") == "iwpmd") {
      add(kIwpmd, Status::kPass, rail_name(k) + "iwpmd runs (pid " + pid + ")", {}, rail);
      return;
    }
  }
  add(kIwpmd, Status::kWarn,
      rail_name(k) +
          "iwpmd does not run: iWARP ports are then not mapped to the host's TCP "
          "ports",
      "systemctl enable --now iwpmd (rdma-core), or start iwpmd", rail);
}

std::string Doctor::bytes_text(std::uint64_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / 1048576.0);
  return buf;
}

void Doctor::check_memlock() {
  // What the rails register: their send slots each, the receive buffers
  // once per device (rails on one device share its SRQ), per rail when
  // the device is unknown.
  std::uint64_t need = 0;
  std::set<std::string> devices;
  for (std::size_t k = 0; k < cfg_.rail_count(); ++k) {
    const cm::RegisteredBytes r = cm::registered_bytes(cfg_.manager_for_rail(k));
    need += r.send_slots;
    const auto& b = k < rails_.size() ? rails_[k].binding : std::nullopt;
    if (!cfg_.manager.use_srq || !b || devices.insert(b->device).second)
      need += r.receive;
  }
  const std::string unit = unit_for(path_);
  auto m =
      host_.memlock ? host_.memlock(unit) : Result<Memlock>(Error::from_errno(ENOSYS, "memlock"));
  const std::string want = "rcnetd registers " + bytes_text(need) + " (srq.size, " +
                           "limits.send_slots, tun.mtu, transport.offload)";
  if (!m) {
    add(kMemlock, Status::kWarn, want + "; RLIMIT_MEMLOCK unknown: " + m.error().message(),
        "systemctl show -p LimitMEMLOCK " + unit + " should say infinity");
    return;
  }
  const std::string limit =
      m->bytes ? bytes_text(*m->bytes) + " (" + std::to_string(*m->bytes) + " bytes)"
               : std::string("unlimited");
  const std::string found = want + "; RLIMIT_MEMLOCK is " + limit + ", from " + m->source;
  const std::string advice = "LimitMEMLOCK=infinity in " + unit +
                             " (the shipped unit sets it; systemctl edit " + unit +
                             "), or ulimit -l unlimited in the shell that starts rcnetd";
  if (!m->bytes || *m->bytes >= need + need / 4)
    add(kMemlock, Status::kPass, found);
  else if (*m->bytes >= need)
    add(kMemlock, Status::kWarn,
        found +
            ": less than 25% left for the QPs' and CQs' own queues, which hardware "
            "providers pin too",
        advice);
  else
    add(kMemlock, Status::kFail, found + ": registering the buffers fails (ENOMEM)", advice);
}

// The unit runs as user rcnet: every node it opens must be readable and
// writable by others (udev's defaults: 0666).
void Doctor::check_dev_node(const std::string& path, const std::string& missing_advice) {
  struct stat st {};
  if (::stat(at_root(path.substr(1)).c_str(), &st) != 0) {
    add(kDevNode, Status::kFail, path + " does not exist", missing_advice);
    return;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if ((st.st_mode & (S_IROTH | S_IWOTH)) == (S_IROTH | S_IWOTH)) {
    add(kDevNode, Status::kPass, path + " is " + mode);
    return;
  }
  add(kDevNode, Status::kFail, path + " is " + mode + ": rcnetd's unit (User=rcnet) cannot open it",
      "chmod 0666 " + path +
          " (udev's default; look for a rule in /etc/udev/rules.d/ that changed it)");
}

void Doctor::check_dev_nodes() {
  check_dev_node("/dev/infiniband/rdma_cm", "modprobe rdma_ucm");
  std::set<std::string> done;
  for (const RailFacts& f : rails_) {
    if (!f.binding || !done.insert(f.binding->device).second)
      continue;
    // uverbsN of the device: /sys/class/infiniband_verbs/uverbsN/ibdev names it.
    std::optional<std::string> node;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(at_root("sys/class/infiniband_verbs"), ec)) {
      const std::string n = e.path().filename().string();
      if (read("sys/class/infiniband_verbs/" + n + "/ibdev") == f.binding->device)
        node = n;
    }
    if (!node) {
      add(kDevNode, Status::kFail, f.binding->device + " has no uverbs device",
          "modprobe ib_uverbs");
      continue;
    }
    check_dev_node("/dev/infiniband/" + *node, "modprobe ib_uverbs; udevadm trigger");
  }
  check_dev_node("/dev/net/tun", "modprobe tun");
}

}  // namespace rcnet::rcnetctl::doctor
