/* Attributes against the operators' schemas (src/backends/native/attr_check.c), as
 * onnxruntime checks them when a model loads. */
#include "testing.h"

#include "backends/native/attr_schemas.h"

#include <string.h>

/* The table is sorted as the search needs, and each op's versions ascend. */
TEST(attr_schemas_are_sorted) {
    for (int i = 1; i < attr_n_schemas; i++) {
        const attr_schema *a = &attr_schemas[i - 1], *b = &attr_schemas[i];
        int c = strcmp(a->domain, b->domain);
        if (!c) c = strcmp(a->op, b->op);
        if (!c) c = a->since < b->since ? -1 : 1;
        CHECK(c < 0);
    }
}

TEST(attr_schema_is_the_opsets_version) {
    graph_node n = {.name = "lr", .op_type = "LeakyRelu", .domain = "", .opset = 17};
    const attr_schema *s = attr_schema_find(&n);
    CHECK(s && s->since == 16 && s->n_attrs == 1 && !strcmp(s->attrs[0].name, "alpha"));
    n.opset = 5; /* LeakyRelu-1 still had consumed_inputs */
    CHECK(attr_schema_find(&n) && attr_schema_find(&n)->since == 1);
    n.opset = 1000; /* later than the table knows: not checked */
    CHECK(attr_schema_find(&n) == NULL);
    graph_node gqa = {.op_type = "GroupQueryAttention", .domain = "com.microsoft", .opset = 1};
    CHECK(attr_schema_find(&gqa) != NULL);
    graph_node frob = {.op_type = "Frobnicate", .domain = "", .opset = 17};
    CHECK(attr_schema_find(&frob) == NULL);
}

TEST(attr_check_refuses_what_onnxruntime_refuses) {
    graph_attr attrs[2] = {{.name = "alpha", .type = ATTR_INT, .i = 2}};
    graph_node n = {.name = "lr", .op_type = "LeakyRelu", .domain = "", .opset = 17,
                    .n_attrs = 1, .attrs = attrs};
    CHECK_ERR(attr_check_node(&n, "m.onnx"), OG_ERR_INVALID_MODEL,
              "m.onnx: node 'lr' (LeakyRelu): attribute 'alpha' is an int, expected a float");
    attrs[0] = (graph_attr){.name = "alpha", .type = ATTR_FLOAT, .f = 0.5f};
    CHECK(attr_check_node(&n, "m.onnx") == NULL);
    attrs[1] = (graph_attr){.name = "beta", .type = ATTR_FLOAT};
    n.n_attrs = 2;
    CHECK_ERR(attr_check_node(&n, "m.onnx"), OG_ERR_INVALID_MODEL,
              "unknown attribute 'beta' (LeakyRelu at opset 17 has attributes alpha)");
    attrs[1].name = "__beta"; /* onnx keeps these names for internal use */
    CHECK(attr_check_node(&n, "m.onnx") == NULL);
    graph_node cast = {.name = "c", .op_type = "Cast", .domain = "", .opset = 17};
    CHECK_ERR(attr_check_node(&cast, "m.onnx"), OG_ERR_INVALID_MODEL,
              "node 'c' (Cast): required attribute 'to' (an int) is missing");
    n.op_type = "Frobnicate"; /* no schema: left to its kernel */
    attrs[1].name = "beta";
    CHECK(attr_check_node(&n, "m.onnx") == NULL);
}
