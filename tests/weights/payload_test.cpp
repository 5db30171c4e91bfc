// docs/weight-schema.md (and the required/optional rule of 6.3): resolving components
// against a checkpoint into validated payloads of ordered segments, and
// retaining their host bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "test_support.hpp"
#include "weights/files/mapped_file.hpp"
#include "weights/files/owned_bytes.hpp"
#include "weights/files/read_file.hpp"
#include "weights/schema/payload.hpp"
#include "weights/schema/resolve.hpp"

namespace rootspan::weights {
namespace {

using testing::FailsWith;
using testing::HasValues;
using testing::header_json;
using testing::safetensors_file;
using testing::TempDir;
using testing::TensorSpec;

const std::vector<TensorSpec> kShard1 = {{"gate", "F32", {4, 2}}, {"norm", "BF16", {2}}};
const std::vector<TensorSpec> kShard2 = {{"up", "F32", {4, 2}}, {"q4k", "U8", {2, 18}}, {"wide", "F32", {2, 2}}};

// A two-shard checkpoint: gate and up lie in different files.
class Payloads : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("a.safetensors", safetensors_file(kShard1));
    dir_.write("b.safetensors", safetensors_file(kShard2));
    dir_.write_text("model.safetensors.index.json",
                    R"({"weight_map": {"gate": "a.safetensors", "norm": "a.safetensors", "up": "b.safetensors",
                        "q4k": "b.safetensors", "wide": "b.safetensors"}})");
    auto opened = Checkpoint::open(dir_.path());
    ASSERT_TRUE(opened) << opened.error()->message();
    checkpoint_.emplace(std::move(opened).value());
  }

  const Checkpoint &checkpoint() const { return *checkpoint_; }

  TempDir dir_;
  std::optional<Checkpoint> checkpoint_;
};

ComponentSpec dense(std::string id, std::vector<std::string> sources, std::vector<std::uint64_t> dims,
                    const char *dtype = "F32", bool required = true) {
  ComponentSpec spec;
  spec.id = std::move(id);
  spec.role = sources.size() > 1 ? ComponentRole::kPackedValues : ComponentRole::kValues;
  spec.sources = std::move(sources);
  spec.dimensions = std::move(dims);
  spec.encoding = DenseEncoding{*safetensors_dtype(std::string_view(dtype))};
  spec.required = required;
  return spec;
}

ComponentSpec q4(std::vector<std::uint64_t> grid) {
  ComponentSpec spec;
  spec.id = "q";
  spec.role = ComponentRole::kPackedValues;
  spec.sources = {"q4k"};
  spec.dimensions = std::move(grid);
  spec.encoding = BlockQuantizedEncoding{"quantization.gguf.q4-0", 32, 18};
  return spec;
}

ComponentPayload payload_of(const Result<ResolvedComponent> &resolved) {
  EXPECT_TRUE(resolved) << resolved.error()->message();
  EXPECT_TRUE(resolved.value().payload);
  return *resolved.value().payload;
}

// ---- resolving -------------------------------------------------------------

TEST_F(Payloads, ASingleDenseTensorIsOneSegment) {
  const ComponentPayload payload = payload_of(resolve_component(checkpoint(), dense("g", {"gate"}, {4, 2})));
  EXPECT_EQ(payload.component_id(), "g");
  EXPECT_EQ(payload.external_names(), (std::vector<std::string>{"gate"}));
  EXPECT_EQ(payload.dimensions(), (std::vector<std::uint64_t>{4, 2}));
  EXPECT_EQ(payload.element_type().dtype, ROOTSPAN_DTYPE_F32);
  ASSERT_EQ(payload.segments().size(), 1u);
  const Segment &segment = payload.segments()[0];
  EXPECT_EQ(segment.source(), "gate");
  EXPECT_EQ(segment.file(), "a.safetensors");
  EXPECT_EQ(segment.file_offset(), 8 + header_json(kShard1).size());
  EXPECT_EQ(segment.length(), 32u);
  EXPECT_TRUE(segment.bytes().empty());  // a file range until host memory is attached
  EXPECT_EQ(payload.total_bytes(), 32u);
}

TEST_F(Payloads, APackedComponentIsOrderedSegmentsAcrossShards) {
  // Stacked: [2, 4, 2].
  const ComponentPayload stacked =
      payload_of(resolve_component(checkpoint(), dense("gate_up", {"gate", "up"}, {2, 4, 2})));
  ASSERT_EQ(stacked.segments().size(), 2u);
  EXPECT_EQ(stacked.segments()[0].source(), "gate");
  EXPECT_EQ(stacked.segments()[0].file(), "a.safetensors");
  EXPECT_EQ(stacked.segments()[1].source(), "up");
  EXPECT_EQ(stacked.segments()[1].file(), "b.safetensors");
  EXPECT_EQ(stacked.segments()[1].file_offset(), 8 + header_json(kShard2).size());
  EXPECT_EQ(stacked.total_bytes(), 64u);
  // Concatenated along axis 0: [8, 2]. The reverse order is another component.
  const ComponentPayload concat = payload_of(resolve_component(checkpoint(), dense("up_gate", {"up", "gate"}, {8, 2})));
  EXPECT_EQ(concat.segments()[0].source(), "up");
  EXPECT_EQ(concat.segments()[1].source(), "gate");
  // Concatenation with different first axes: gate [4,2] + wide [2,2] = [6,2].
  EXPECT_TRUE(resolve_component(checkpoint(), dense("gw", {"gate", "wide"}, {6, 2})));
  // A single source may also be stacked as [1, shape...].
  EXPECT_TRUE(resolve_component(checkpoint(), dense("g1", {"gate"}, {1, 4, 2})));
}

TEST_F(Payloads, TheSegmentsOfOneShardShareItsNameAndPath) {
  ComponentSchema schema;
  schema.components = {dense("g", {"gate"}, {4, 2}), dense("gw", {"gate", "wide"}, {6, 2}),
                       dense("w", {"wide"}, {2, 2})};
  auto resolved = resolve_schema(checkpoint(), std::move(schema));
  ASSERT_TRUE(resolved) << resolved.error()->message();
  const auto &p = resolved.value().payloads;
  ASSERT_EQ(p.size(), 3u);
  const Segment &gate = p[0].segments()[0], &gate_again = p[1].segments()[0], &wide = p[1].segments()[1],
                &wide_again = p[2].segments()[0];
  EXPECT_EQ(gate.file(), "a.safetensors");
  EXPECT_EQ(wide.file(), "b.safetensors");
  EXPECT_EQ(gate.path().filename(), "a.safetensors");
  EXPECT_EQ(wide.path().filename(), "b.safetensors");
  // One copy a shard across components: the same objects, not equal copies.
  EXPECT_EQ(&gate.path(), &gate_again.path());
  EXPECT_EQ(&gate.file(), &gate_again.file());
  EXPECT_EQ(&wide.path(), &wide_again.path());
  EXPECT_NE(&gate.path(), &wide.path());
}

TEST_F(Payloads, DimensionsMustBeTheShapeTheStackOrTheConcatenation) {
  auto result = resolve_component(checkpoint(), dense("gate_up", {"gate", "up"}, {2, 8}));
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"load_component", "component \"gate_up\": dimensions [2, 8] are neither the stack [2, 4, 2]",
                         "nor the concatenation [8, 2]", "tensor \"gate\" in \"a.safetensors\" [4, 2]",
                         "tensor \"up\" in \"b.safetensors\" [4, 2]"}));
  EXPECT_TRUE(FailsWith(resolve_component(checkpoint(), dense("g", {"gate"}, {8})), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"dimensions [8] are neither"}));
  // Different shapes cannot stack; different trailing axes cannot concatenate.
  EXPECT_TRUE(FailsWith(resolve_component(checkpoint(), dense("gw", {"gate", "wide"}, {2, 4, 2})),
                        ROOTSPAN_ERR_INVALID_PAYLOAD, {"(shapes differ)"}));
}

TEST_F(Payloads, ElementTypeMustEqualEverySourceDtype) {
  auto result = resolve_component(checkpoint(), dense("n", {"norm"}, {2}, "F16"));
  EXPECT_TRUE(FailsWith(
      result, ROOTSPAN_ERR_INVALID_PAYLOAD,
      {"component \"n\": tensor \"norm\" in \"a.safetensors\" is BF16", "the component's element type is F16"}));
  EXPECT_TRUE(HasValues(result, ROOTSPAN_DTYPE_F16, ROOTSPAN_DTYPE_BF16));
  // In a packed component every source is checked, the second too.
  EXPECT_TRUE(FailsWith(resolve_component(checkpoint(), dense("p", {"gate", "norm"}, {2})),
                        ROOTSPAN_ERR_INVALID_PAYLOAD, {"tensor \"norm\" in \"a.safetensors\" is BF16"}));
}

TEST_F(Payloads, BlockQuantizedSourcesAreBytesInWholeBlocks) {
  // q4k is U8 [2, 18]: 2 rows of one 18-byte block.
  const ComponentPayload payload = payload_of(resolve_component(checkpoint(), q4({2, 1})));
  EXPECT_EQ(payload.total_bytes(), 36u);
  EXPECT_EQ(payload.element_type().dtype, ROOTSPAN_DTYPE_U8);
  EXPECT_TRUE(resolve_component(checkpoint(), q4({1, 2, 1})));  // stacked single source
  EXPECT_TRUE(FailsWith(resolve_component(checkpoint(), q4({36})), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"component \"q\": dimensions [36] are neither"}));
  ComponentSpec wrong_type = q4({2, 1});
  wrong_type.sources = {"gate"};
  EXPECT_TRUE(FailsWith(resolve_component(checkpoint(), wrong_type), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"tensor \"gate\" in \"a.safetensors\" is F32, the component's element type is U8"}));
  ComponentSpec partial = q4({2, 1});
  std::get<BlockQuantizedEncoding>(partial.encoding).bytes_per_block = 12;
  auto result = resolve_component(checkpoint(), partial);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"tensor \"q4k\" in \"b.safetensors\": its last axis of 18 bytes is not a whole number of "
                         "12-byte blocks"}));
}

TEST_F(Payloads, ARequiredComponentWithMissingSourcesFails) {
  auto result = resolve_component(checkpoint(), dense("gate_up", {"gate", "up_proj", "down_proj"}, {3, 4, 2}));
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"component \"gate_up\": required, but 2 of its 3 source tensors are not in the checkpoint",
                         "\"up_proj\", \"down_proj\""}));
  EXPECT_TRUE(HasValues(result, 3, 1));
}

TEST_F(Payloads, AnOptionalComponentWithMissingSourcesIsSkipped) {
  auto result = resolve_component(checkpoint(), dense("bias", {"gate", "bias"}, {2, 4, 2}, "F32", false));
  ASSERT_TRUE(result) << result.error()->message();
  EXPECT_FALSE(result.value().payload);
  ASSERT_TRUE(result.value().skipped);
  EXPECT_EQ(result.value().skipped->id, "bias");
  EXPECT_EQ(result.value().skipped->missing, (std::vector<std::string>{"bias"}));
  EXPECT_NE(result.value().skipped->reason.find("\"bias\""), std::string::npos);
}

TEST_F(Payloads, AnEmptyComponentCannotBeLoaded) {
  TempDir dir;
  const auto path = dir.write("m.safetensors", safetensors_file({{"empty", "F32", {0, 3}}}));
  auto ckpt = Checkpoint::open(path);
  ASSERT_TRUE(ckpt);
  EXPECT_TRUE(FailsWith(resolve_component(ckpt.value(), dense("e", {"empty"}, {0, 3})), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"component \"e\": required, but its dimensions [0, 3] hold no bytes"}));
  auto skipped = resolve_component(ckpt.value(), dense("e", {"empty"}, {0, 3}, "F32", false));
  ASSERT_TRUE(skipped);
  EXPECT_TRUE(skipped.value().skipped);
}

TEST_F(Payloads, ResolveSchemaLoadsRequiredAndReportsSkipped) {
  ComponentSchema schema;
  schema.schema_version = "1.0.0";
  schema.components = {dense("gate_up", {"gate", "up"}, {2, 4, 2}), dense("x", {"missing"}, {1}, "F32", false),
                       q4({2, 1})};
  auto resolved = resolve_schema(checkpoint(), schema);
  ASSERT_TRUE(resolved) << resolved.error()->message();
  ASSERT_EQ(resolved.value().payloads.size(), 2u);
  EXPECT_EQ(resolved.value().payloads[0].component_id(), "gate_up");
  EXPECT_EQ(resolved.value().payloads[1].component_id(), "q");
  ASSERT_EQ(resolved.value().skipped.size(), 1u);
  EXPECT_EQ(resolved.value().skipped[0].id, "x");
  // The default schema of a checkpoint always resolves.
  auto all = resolve_schema(checkpoint(), default_schema(checkpoint()));
  ASSERT_TRUE(all) << all.error()->message();
  EXPECT_EQ(all.value().payloads.size(), 5u);
}

TEST_F(Payloads, ADefaultSchemaResolvesEachComponentToTheTensorItNames) {
  // The default schema carries the tensors it was made of, which resolving
  // takes instead of looking their names up; a component whose carried
  // tensor is not the one it names (here all but the middle one, the
  // components reversed and the tensors not) is looked up by name.
  for (const bool reversed : {false, true}) {
    ComponentSchema schema = default_schema(checkpoint());
    ASSERT_EQ(schema.found_sources.size(), schema.components.size());
    if (reversed) std::reverse(schema.components.begin(), schema.components.end());
    auto resolved = resolve_schema(checkpoint(), std::move(schema));
    ASSERT_TRUE(resolved) << resolved.error()->message();
    ASSERT_EQ(resolved.value().payloads.size(), 5u);
    for (const ComponentPayload &payload : resolved.value().payloads) {
      ASSERT_EQ(payload.segments().size(), 1u);
      const Segment &segment = payload.segments()[0];
      EXPECT_EQ(segment.source(), payload.component_id());
      const TensorRef tensor = checkpoint().find(payload.component_id());
      ASSERT_TRUE(tensor);
      EXPECT_EQ(segment.file(), tensor.shard->file) << payload.component_id();
      EXPECT_EQ(segment.file_offset(), tensor.file_offset()) << payload.component_id();
    }
  }
}

// ---- from_ordered_segments: every rule on its own ----------------------------

class OrderedSegments : public ::testing::Test {
 protected:
  ComponentSpec component = dense("gate_up", {"gate", "up"}, {2, 2, 2}, "F16");
  std::vector<std::string> names = {"gate", "up"};
  std::vector<std::string> files = {"model-1.safetensors", "model-2.safetensors"};
  std::vector<std::uint64_t> dims = {2, 2, 2};
  SafetensorsDtype f16 = *safetensors_dtype(std::string_view("F16"));
  std::vector<Segment> segments = {Segment("gate", "model-1.safetensors", "/m/model-1.safetensors", 100, 8),
                                   Segment("up", "model-2.safetensors", "/m/model-2.safetensors", 200, 8)};

  Result<ComponentPayload> make() {
    return ComponentPayload::from_ordered_segments(component, names, files, dims, f16, segments);
  }
};

TEST_F(OrderedSegments, AValidPayload) {
  auto payload = make();
  ASSERT_TRUE(payload) << payload.error()->message();
  EXPECT_EQ(payload.value().total_bytes(), 16u);
  EXPECT_EQ(payload.value().external_names(), component.sources);
}

TEST_F(OrderedSegments, SourceOrderIsPartOfTheIdentity) {
  std::swap(names[0], names[1]);
  EXPECT_TRUE(FailsWith(make(), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"component \"gate_up\": external name 0 is \"up\" where the schema has \"gate\"",
                         "source order is part of the component's identity"}));
}

TEST_F(OrderedSegments, NameCountMustMatch) {
  names.pop_back();
  auto result = make();
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD, {"has 1 external names, the schema names 2 sources"}));
  EXPECT_TRUE(HasValues(result, 2, 1));
}

TEST_F(OrderedSegments, OneSourceFilePerName) {
  files.pop_back();
  auto result = make();
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD, {"has 1 source files for 2 external names"}));
  EXPECT_TRUE(HasValues(result, 2, 1));
}

TEST_F(OrderedSegments, SourceFilesArePortable) {
  for (const char *bad : {"", "/abs.safetensors", "../up.safetensors", "a\\b", "C:x"}) {
    files[1] = bad;
    EXPECT_TRUE(FailsWith(make(), ROOTSPAN_ERR_INVALID_PAYLOAD, {"gate_up", "is not a portable relative path"})) << bad;
  }
}

TEST_F(OrderedSegments, OwnSegmentsFilesArePortable) {
  // from_own_segments is given no source files: the segments' own files are
  // them, and each must be portable all the same.
  auto own = [&] { return ComponentPayload::from_own_segments(ComponentSpec(component), f16, segments); };
  ASSERT_TRUE(own()) << own().error()->message();
  EXPECT_EQ(own().value().segments()[1].file(), "model-2.safetensors");
  for (const char *bad : {"", "/abs.safetensors", "../up.safetensors", "a\\b", "C:x"}) {
    segments[1] = Segment("up", bad, "/m/model-2.safetensors", 200, 8);
    EXPECT_TRUE(FailsWith(own(), ROOTSPAN_ERR_INVALID_PAYLOAD, {"gate_up", "is not a portable relative path"})) << bad;
  }
}

TEST_F(OrderedSegments, DimensionsMustEqualTheSchema) {
  dims = {4, 2};
  EXPECT_TRUE(
      FailsWith(make(), ROOTSPAN_ERR_INVALID_PAYLOAD, {"dimensions [4, 2] differ from the schema's [2, 2, 2]"}));
}

TEST_F(OrderedSegments, ElementTypeMustEqualTheSchema) {
  auto result = ComponentPayload::from_ordered_segments(component, names, files, dims,
                                                        *safetensors_dtype(std::string_view("BF16")), segments);
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD, {"element type BF16 differs from the schema's F16"}));
  EXPECT_TRUE(HasValues(result, ROOTSPAN_DTYPE_F16, ROOTSPAN_DTYPE_BF16));
}

TEST_F(OrderedSegments, SegmentsAreOnePerNameInOrder) {
  segments.clear();
  EXPECT_TRUE(FailsWith(make(), ROOTSPAN_ERR_INVALID_PAYLOAD, {"component \"gate_up\": has no segments"}));
  segments = {Segment("gate", "model-1.safetensors", "/m/1", 100, 16)};
  EXPECT_TRUE(HasValues(make(), 2, 1));
  segments = {Segment("up", "model-1.safetensors", "/m/1", 100, 8),
              Segment("gate", "model-2.safetensors", "/m/2", 0, 8)};
  EXPECT_TRUE(FailsWith(make(), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"segment 0 (tensor \"up\" in \"model-1.safetensors\") carries tensor \"up\", but external "
                         "name 0 is \"gate\""}));
  segments = {Segment("gate", "model-2.safetensors", "/m/2", 100, 8),
              Segment("up", "model-2.safetensors", "/m/2", 0, 8)};
  EXPECT_TRUE(FailsWith(make(), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"lies in \"model-2.safetensors\", but source file 0 is \"model-1.safetensors\""}));
}

TEST_F(OrderedSegments, NoSegmentIsEmpty) {
  segments[1] = Segment("up", "model-2.safetensors", "/m/2", 200, 0);
  EXPECT_TRUE(FailsWith(make(), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"segment 1 (tensor \"up\" in \"model-2.safetensors\") is empty"}));
}

TEST_F(OrderedSegments, TheTotalMustEqualThePhysicalBytes) {
  segments[1] = Segment("up", "model-2.safetensors", "/m/2", 200, 7);
  auto result = make();
  EXPECT_TRUE(
      FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD, {"segments hold 15 bytes, the schema's physical size is 16"}));
  EXPECT_TRUE(HasValues(result, 16, 15));
  // Block-quantized: the grid's element count is not the byte count.
  ComponentSpec block;
  block.id = "component.test.q4-k";
  block.sources = {"weight.q4_k"};
  block.dimensions = {2};
  block.encoding = BlockQuantizedEncoding{"quantization.gguf.q4-k", 256, 144};
  const SafetensorsDtype u8 = *safetensors_dtype(std::string_view("U8"));
  EXPECT_TRUE(ComponentPayload::from_ordered_segments(block, {"weight.q4_k"}, {"model.safetensors"}, {2}, u8,
                                                      {Segment("weight.q4_k", "model.safetensors", "/m", 0, 288)}));
  EXPECT_TRUE(
      HasValues(ComponentPayload::from_ordered_segments(block, {"weight.q4_k"}, {"model.safetensors"}, {2}, u8,
                                                        {Segment("weight.q4_k", "model.safetensors", "/m", 0, 2)}),
                288, 2));
}

TEST_F(OrderedSegments, AnInvalidComponentIsRefused) {
  component.id = "bad id";
  EXPECT_TRUE(FailsWith(make(), ROOTSPAN_ERR_INVALID_SCHEMA, {"component id \"bad id\" is not valid"}));
}

// ---- retained host memory ------------------------------------------------------

TEST_F(Payloads, SegmentsRetainTheExactRangesOfTheirFiles) {
  auto resolved = resolve_component(checkpoint(), dense("gate_up", {"gate", "up"}, {2, 4, 2}));
  ComponentPayload payload = payload_of(resolved);
  std::map<std::string, std::shared_ptr<const StableHostMemory>> owners;
  for (const Shard &shard : checkpoint().shards()) {
    auto mapped = MappedFile::open(shard.path, shard.file_size);
    ASSERT_TRUE(mapped) << mapped.error()->message();
    owners[shard.file] = mapped.value();
  }
  auto retained = payload.retain_host_memory([&](const Segment &segment) { return owners.at(segment.file()); });
  ASSERT_TRUE(retained) << retained.error()->message();
  std::vector<std::weak_ptr<const StableHostMemory>> watch;
  for (const auto &[file, owner] : owners) watch.push_back(owner);
  for (std::size_t i = 0; i < 2; ++i) {
    const Segment &segment = payload.segments()[i];
    ASSERT_TRUE(segment.retained());
    // The very bytes: same address, same length.
    EXPECT_EQ(segment.retained()->bytes().data(), segment.bytes().data());
    EXPECT_EQ(segment.retained()->bytes().size(), segment.length());
    EXPECT_EQ(segment.retained()->offset(), segment.file_offset());
    // Each tensor is the first of its shard: its bytes are the start of the pattern.
    for (std::size_t k = 0; k < segment.length(); ++k) {
      ASSERT_EQ(segment.bytes()[k], testing::pattern_byte(k)) << i << ":" << k;
    }
  }
  // The regions keep their files mapped after the payload and every other holder.
  std::vector<RetainedRegion> regions = {*payload.segments()[0].retained(), *payload.segments()[1].retained()};
  owners.clear();
  payload = payload_of(resolved);
  for (const auto &weak : watch) EXPECT_FALSE(weak.expired());
  EXPECT_EQ(regions[1].bytes()[3], testing::pattern_byte(3));
  regions.clear();
  for (const auto &weak : watch) EXPECT_TRUE(weak.expired());
}

TEST_F(Payloads, ReadFileOwnersWorkTheSame) {
  ComponentPayload payload = payload_of(resolve_component(checkpoint(), dense("w", {"wide"}, {2, 2})));
  auto read = ReadFile::open(checkpoint().find("wide").shard->path);
  ASSERT_TRUE(read);
  std::shared_ptr<const StableHostMemory> owner = read.value();
  ASSERT_TRUE(payload.retain_host_memory([&](const Segment &) { return owner; }));
  const std::uint64_t begin = checkpoint().find("wide").tensor->begin;
  EXPECT_EQ(payload.segments()[0].bytes()[0], testing::pattern_byte(begin));
}

TEST_F(Payloads, AnOwnerTooShortForItsSegmentFails) {
  ComponentPayload payload = payload_of(resolve_component(checkpoint(), dense("w", {"wide"}, {2, 2})));
  // As if the file had been truncated since its header was read.
  auto truncated = std::make_shared<OwnedBytes>(std::vector<std::byte>(40));
  auto result = payload.retain_host_memory([&](const Segment &) { return truncated; });
  EXPECT_TRUE(
      FailsWith(result, ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT,
                {"component \"w\"", "segment 0 (tensor \"wide\" in \"b.safetensors\")", "past its owner's 40"}));
  EXPECT_TRUE(FailsWith(payload.retain_host_memory([](const Segment &) { return nullptr; }),
                        ROOTSPAN_ERR_INVALID_PAYLOAD, {"has no host memory owner"}));
}

TEST_F(OrderedSegments, ARetainedRegionMustBeTheValidatedBytes) {
  auto owner = std::make_shared<OwnedBytes>(std::vector<std::byte>(64, std::byte{1}));
  auto region_a = RetainedRegion::make(owner, 0, 8);
  auto region_b = RetainedRegion::make(owner, 8, 8);
  ASSERT_TRUE(region_a && region_b);
  // Segments that carry bytes and their region pass.
  ASSERT_TRUE(segments[0].set_bytes(region_a.value().bytes()));
  ASSERT_TRUE(segments[0].retain(region_a.value()));
  ASSERT_TRUE(segments[1].set_bytes(region_b.value().bytes()));
  ASSERT_TRUE(segments[1].retain(region_b.value()));
  auto payload = make();
  ASSERT_TRUE(payload) << payload.error()->message();

  // Another region of equal length and contents, elsewhere: refused.
  auto other = std::make_shared<OwnedBytes>(std::vector<std::byte>(64, std::byte{1}));
  auto elsewhere = RetainedRegion::make(other, 8, 8);
  ASSERT_TRUE(elsewhere);
  EXPECT_TRUE(FailsWith(payload.value().retain(1, elsewhere.value()), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"component \"gate_up\"", "tensor \"up\"",
                         "retained host-memory region differs from its "
                         "validated bytes: address"}));
  // The same start, another length: refused.
  auto longer = RetainedRegion::make(owner, 8, 9);
  ASSERT_TRUE(longer);
  auto result = payload.value().retain(1, longer.value());
  EXPECT_TRUE(FailsWith(result, ROOTSPAN_ERR_INVALID_PAYLOAD, {"length 9 instead of 8"}));
  EXPECT_TRUE(HasValues(result, 8, 9));
  EXPECT_TRUE(
      FailsWith(payload.value().retain(2, region_a.value()), ROOTSPAN_ERR_INVALID_PAYLOAD, {"has no segment 2"}));
}

TEST(Segment, HostBytesAreSetOnceAndMustFitTheLength) {
  std::vector<std::byte> bytes(16);
  Segment segment("w", "m.safetensors", "/m", 0, 8);
  auto wrong = segment.set_bytes({bytes.data(), 7});
  EXPECT_TRUE(FailsWith(wrong, ROOTSPAN_ERR_INVALID_PAYLOAD, {"tensor \"w\" in \"m.safetensors\": host bytes are 7"}));
  EXPECT_TRUE(HasValues(wrong, 8, 7));
  ASSERT_TRUE(segment.set_bytes({bytes.data(), 8}));
  EXPECT_TRUE(FailsWith(segment.set_bytes({bytes.data() + 8, 8}), ROOTSPAN_ERR_INVALID_PAYLOAD,
                        {"already has its validated host bytes"}));
  // Retaining without validated bytes is refused.
  Segment bare("w", "m.safetensors", "/m", 0, 8);
  auto owner = std::make_shared<OwnedBytes>(std::vector<std::byte>(8));
  auto region = RetainedRegion::make(owner, 0, 8);
  ASSERT_TRUE(region);
  EXPECT_TRUE(FailsWith(bare.retain(region.value()), ROOTSPAN_ERR_INVALID_PAYLOAD, {"the segment has no host bytes"}));
}

}  // namespace
}  // namespace rootspan::weights
