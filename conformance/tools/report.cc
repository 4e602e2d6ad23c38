#include "report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/conformance/properties.h"
#include "lmcache/core/regular_file.h"

namespace lmcache::conformance::tools {

namespace {

// Writes a report file (lmcache/core/regular_file.h); the reason it could not, or "".
std::string write_report(const std::string& path, const std::string& text) {
  try {
    write_output_file(path, text);
  } catch (const std::exception& e) {
    return std::string("cannot write the report: ") + e.what();
  }
  return {};
}

std::string indent(const std::string& text, const std::string& prefix, std::size_t max_lines) {
  std::istringstream in(text);
  std::string line, out;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (n++ == max_lines) {
      out += prefix + "...\n";
      break;
    }
    out += prefix + line + "\n";
  }
  return out;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters other than tab / newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

constexpr std::string_view kCounterexample = "counterexample (after";

// `label` then `text`, its further lines indented under the label's margin plus two.
std::string hang(const std::string& label, const std::string& text, std::size_t max_lines) {
  const std::size_t margin = label.find_first_not_of(' ');
  std::string indented = indent(text, std::string(margin + 2, ' '), max_lines);
  if (indented.size() < margin + 2) return label + "\n";
  return label + indented.substr(margin + 2);
}

}  // namespace

std::string rule_of(const std::string& message) {
  const auto at = message.find(kCounterexample);
  std::string rule = at == std::string::npos ? message : message.substr(0, at);
  while (!rule.empty() && (rule.back() == '\n' || rule.back() == ' ')) rule.pop_back();
  return rule;
}

std::string counterexample_of(const std::string& message) {
  const auto at = message.find(kCounterexample);
  if (at == std::string::npos) return "none: a fixed scenario, no generated input";
  return message.substr(at);
}

std::map<Status, std::size_t> RunReport::Summary() const {
  std::map<Status, std::size_t> counts = {{Status::kPass, 0},
                                          {Status::kNotSupported, 0},
                                          {Status::kQualityWarning, 0},
                                          {Status::kFail, 0}};
  for (const auto& impl : implementations) {
    for (const auto& r : impl.results) ++counts[r.status];
  }
  return counts;
}

int RunReport::ExitCode() const {
  if (Summary().at(Status::kFail) > 0) return 1;
  return errors.empty() ? 0 : 2;
}

std::vector<SharedCause> ImplementationReport::causes() const {
  std::vector<SharedCause> out;
  for (const PropertyResult& r : results) {
    if (r.status != Status::kFail || r.implementation_error.empty()) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const SharedCause& c) {
      return c.implementation_error == r.implementation_error;
    });
    if (it == out.end()) it = out.insert(out.end(), SharedCause{r.implementation_error, {}});
    it->properties.push_back(r.suite + "." + r.property);
  }
  return out;
}

void print_matrix(const RunReport& report, std::ostream& os) {
  os << "lmcache-conform " << LMCACHE_CONFORMANCE_PROJECT_VERSION << " (plugin ABI v"
     << LMCACHE_CONFORMANCE_ABI_VERSION << ", mustpass " << LMCACHE_CONFORMANCE_MUSTPASS_VERSION
     << ")  depth " << report.depth << "  RC_PARAMS=\"" << report.rc_params << "\"\n";
  for (auto kind : {ImplementationKind::kSerde, ImplementationKind::kProcessor,
                    ImplementationKind::kAdapter, ImplementationKind::kWrapper}) {
    std::vector<const ImplementationReport*> impls;
    for (const auto& i : report.implementations) {
      if (i.kind == kind && !i.results.empty()) impls.push_back(&i);
    }
    if (impls.empty()) continue;
    // Rows: the catalogue's properties that ran for at least one implementation.
    std::vector<std::string> rows;
    for (const auto& p : properties_of(kind)) {
      for (auto* i : impls) {
        bool ran = std::any_of(i->results.begin(), i->results.end(),
                               [&](const PropertyResult& r) { return r.property == p.name; });
        if (ran) {
          rows.emplace_back(p.name);
          break;
        }
      }
    }
    std::size_t first = std::string(suite_name(kind)).size();
    for (auto& r : rows) first = std::max(first, r.size() + 2);
    first += 2;
    std::vector<std::size_t> widths;
    for (auto* i : impls) widths.push_back(std::max<std::size_t>(i->name.size(), 14) + 2);
    os << "\n" << std::left << std::setw(static_cast<int>(first)) << suite_name(kind);
    for (std::size_t c = 0; c < impls.size(); ++c) {
      os << std::setw(static_cast<int>(widths[c])) << impls[c]->name;
    }
    os << "\n";
    for (auto& row : rows) {
      os << "  " << std::setw(static_cast<int>(first - 2)) << row;
      for (std::size_t c = 0; c < impls.size(); ++c) {
        std::string cell = "-";
        for (const auto& r : impls[c]->results) {
          if (r.property == row) cell = std::string(status_name(r.status));
        }
        os << std::setw(static_cast<int>(widths[c])) << cell;
      }
      os << "\n";
    }
  }
  bool header = false;
  for (const auto& impl : report.implementations) {
    for (const SharedCause& c : impl.causes()) {
      if (!header) os << "\nCauses (the implementation's own first error in each Fail):\n";
      header = true;
      os << "  " << impl.name << ": \"" << c.implementation_error << "\" came first in "
         << c.properties.size() << (c.properties.size() == 1 ? " Fail: " : " Fails: ");
      for (std::size_t i = 0; i < c.properties.size(); ++i) {
        os << (i > 0 ? ", " : "") << c.properties[i];
      }
      os << "\n";
    }
  }
  header = false;
  for (const auto& impl : report.implementations) {
    for (const auto& r : impl.results) {
      if (r.status != Status::kFail) continue;
      if (!header) os << "\nFailures:\n";
      header = true;
      os << "  FAIL " << impl.name << " (" << kind_name(impl.kind) << ") " << r.suite << "."
         << r.property << "\n"
         << hang("      rule: ", rule_of(r.message), 12)
         << hang("      ", counterexample_of(r.message), 20);
      if (r.rc_seed) os << "      seed: " << *r.rc_seed << "\n";
      if (!r.rc_params.empty()) os << "      RC_PARAMS=\"" << r.rc_params << "\"\n";
      os << "      reproduce: " << r.reproduce << "\n";
    }
  }
  header = false;
  for (const auto& impl : report.implementations) {
    for (const auto& r : impl.results) {
      if (r.status != Status::kQualityWarning && r.status != Status::kNotSupported) continue;
      if (!header) os << "\nNotes:\n";
      header = true;
      os << "  " << status_name(r.status) << " " << impl.name << " " << r.suite << "." << r.property
         << ": " << first_line(r.message) << "\n";
    }
  }
  for (const auto& e : report.errors) os << "\nERROR: " << e << "\n";
  auto counts = report.Summary();
  os << "\nSummary: " << counts[Status::kPass] << " Pass, " << counts[Status::kNotSupported]
     << " NotSupported, " << counts[Status::kQualityWarning] << " QualityWarning, "
     << counts[Status::kFail] << " Fail over " << report.implementations.size()
     << " implementation(s) in " << std::fixed << std::setprecision(1) << report.duration_s
     << " s -> " << (report.ExitCode() == 0 ? "CONFORMANT" : "NOT CONFORMANT") << "\n";
}

std::string write_json_report(const RunReport& report, const std::string& path) {
  nlohmann::json j;
  j["tool"] = "lmcache-conform";
  j["project_version"] = LMCACHE_CONFORMANCE_PROJECT_VERSION;
  j["plugin_abi_version"] = LMCACHE_CONFORMANCE_ABI_VERSION;
  j["mustpass_version"] = LMCACHE_CONFORMANCE_MUSTPASS_VERSION;
  j["rc_params"] = report.rc_params;
  j["depth"] = report.depth;
  j["duration_s"] = report.duration_s;
  j["implementations"] = nlohmann::json::array();
  for (const auto& impl : report.implementations) {
    nlohmann::json ji;
    ji["name"] = impl.name;
    ji["kind"] = std::string(kind_name(impl.kind));
    ji["source"] = impl.source;
    ji["properties"] = nlohmann::json::array();
    for (const auto& r : impl.results) {
      nlohmann::json jr;
      jr["suite"] = r.suite;
      jr["property"] = r.property;
      jr["status"] = std::string(status_name(r.status));
      jr["message"] = r.message;
      if (r.status == Status::kFail) {
        jr["rule"] = rule_of(r.message);
        jr["counterexample"] = counterexample_of(r.message);
      }
      jr["duration_s"] = r.duration_s;
      jr["rc_seed"] = r.rc_seed ? nlohmann::json(*r.rc_seed) : nlohmann::json(nullptr);
      jr["rc_params"] = r.rc_params;
      jr["reproduce"] = r.reproduce;
      if (r.status == Status::kFail) jr["implementation_error"] = r.implementation_error;
      ji["properties"].push_back(jr);
    }
    ji["causes"] = nlohmann::json::array();
    for (const SharedCause& c : impl.causes()) {
      ji["causes"].push_back(
          {{"implementation_error", c.implementation_error}, {"properties", c.properties}});
    }
    j["implementations"].push_back(ji);
  }
  j["errors"] = report.errors;
  nlohmann::json summary;
  for (auto& [status, n] : report.Summary()) summary[std::string(status_name(status))] = n;
  j["summary"] = summary;
  j["exit_code"] = report.ExitCode();
  return write_report(path, j.dump(2) + "\n");
}

std::string write_junit_report(const RunReport& report, const std::string& path) {
  auto counts = report.Summary();
  std::ostringstream x;
  x << std::fixed << std::setprecision(3);
  std::size_t total = 0;
  for (auto& [s, n] : counts) total += n;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<testsuites name=\"lmcache-conform\" tests=\"" << total << "\" failures=\""
    << counts[Status::kFail] << "\" skipped=\"" << counts[Status::kNotSupported] << "\" errors=\""
    << report.errors.size() << "\" time=\"" << report.duration_s << "\">\n";
  for (const auto& impl : report.implementations) {
    if (impl.results.empty()) continue;  // everything filtered out
    std::size_t fails = 0, skips = 0;
    double time = 0;
    for (const auto& r : impl.results) {
      fails += r.status == Status::kFail;
      skips += r.status == Status::kNotSupported;
      time += r.duration_s;
    }
    x << "  <testsuite name=\"" << xml_escape(impl.name) << "\" tests=\"" << impl.results.size()
      << "\" failures=\"" << fails << "\" skipped=\"" << skips << "\" errors=\"0\" time=\"" << time
      << "\">\n"
      << "    <properties>\n"
      << "      <property name=\"kind\" value=\"" << kind_name(impl.kind) << "\"/>\n"
      << "      <property name=\"source\" value=\"" << xml_escape(impl.source) << "\"/>\n"
      << "      <property name=\"rc_params\" value=\"" << xml_escape(report.rc_params) << "\"/>\n"
      << "      <property name=\"depth\" value=\"" << xml_escape(report.depth) << "\"/>\n"
      << "    </properties>\n";
    for (const auto& r : impl.results) {
      x << "    <testcase classname=\"" << xml_escape(impl.name + "." + r.suite) << "\" name=\""
        << xml_escape(r.property) << "\" time=\"" << r.duration_s << "\">\n";
      switch (r.status) {
        case Status::kFail:
          x << "      <failure message=\"" << xml_escape(first_line(rule_of(r.message)))
            << "\" type=\"Fail\">"
            << xml_escape("property: " + impl.name + "." + r.suite + "." + r.property +
                          "\nrule: " + rule_of(r.message) + "\n" + counterexample_of(r.message) +
                          (r.rc_seed ? "\nseed: " + std::to_string(*r.rc_seed) : "") +
                          (r.rc_params.empty() ? "" : "\nRC_PARAMS=\"" + r.rc_params + "\"") +
                          "\nreproduce: " + r.reproduce)
            << "</failure>\n";
          break;
        case Status::kNotSupported:
          x << "      <skipped message=\"" << xml_escape("NotSupported: " + first_line(r.message))
            << "\"/>\n";
          break;
        case Status::kQualityWarning:
          x << "      <system-out>" << xml_escape("QualityWarning: " + r.message)
            << "</system-out>\n";
          break;
        case Status::kPass:
          break;
      }
      x << "    </testcase>\n";
    }
    x << "  </testsuite>\n";
  }
  x << "</testsuites>\n";
  return write_report(path, x.str());
}

}  // namespace lmcache::conformance::tools
