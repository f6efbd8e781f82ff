#include "vigil/query/query.h"

#include <map>

namespace vigil::query {

Result<RecordBatch> TakeRows(const TableSnapshot& snapshot, const std::vector<RowAddress>& rows,
                             const std::vector<std::string>& columns) {
  const SchemaPtr& schema = snapshot.manifest().schema;
  SchemaPtr projection = schema;
  if (!columns.empty()) {
    std::vector<Field> fields;
    for (const auto& c : columns) {
      auto idx = schema->IndexOf(c);
      if (!idx) return Status::InvalidArgument("unknown column '" + c + "'");
      fields.push_back(schema->field(*idx));
    }
    VIGIL_ASSIGN_OR_RETURN(projection, Schema::Make(std::move(fields)));
  }
  std::vector<int32_t> ids;
  for (const auto& f : projection->fields()) ids.push_back(f.id);
  RecordBatch out = RecordBatch::Empty(projection);
  // Each fragment reader is looked up once per call, whatever the row order.
  std::map<uint32_t, std::shared_ptr<FragmentReader>> open;
  for (RowAddress row : rows) {
    const FragmentMeta* meta = snapshot.manifest().FindFragment(RowFragment(row));
    if (meta == nullptr || RowOffset(row) >= meta->num_rows) {
      return Status::InvalidArgument("row " + std::to_string(RowFragment(row)) + ":" + std::to_string(RowOffset(row)) +
                                     " is not in version " + std::to_string(snapshot.version()));
    }
    auto it = open.find(RowFragment(row));
    if (it == open.end()) {
      VIGIL_ASSIGN_OR_RETURN(auto frag, snapshot.Fragment(RowFragment(row)));
      it = open.emplace(RowFragment(row), std::move(frag)).first;
    }
    VIGIL_ASSIGN_OR_RETURN(auto values, it->second->ReadRow(RowOffset(row), ids));
    for (size_t c = 0; c < values.size(); ++c) VIGIL_RETURN_IF_ERROR(out.columns[c].Append(values[c]));
    out.row_addresses.push_back(row);
    ++out.num_rows;
  }
  return out;
}

}  // namespace vigil::query
