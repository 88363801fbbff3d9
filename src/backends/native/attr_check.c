/* Attributes checked against the operator's schema when a session opens, as onnxruntime
 * checks them when it loads a model: an attribute the schema does not name, one of
 * another type, or a required one missing is an error naming the node. (Duplicate and
 * typeless attributes are the loader's: they are wrong whatever the op.) The look-ups of
 * kernels would otherwise take LeakyRelu's alpha given as an int at its value, and ignore
 * a misspelt attribute. */
#include "backends/native/attr_schemas.h"

#include <stdio.h>
#include <string.h>

static int top_version(const char *domain) {
    for (const attr_schema_domain *d = attr_schema_domains; d->domain; d++)
        if (!strcmp(d->domain, domain)) return d->top;
    return 0;
}

static int cmp_op(const attr_schema *s, const char *domain, const char *op) {
    int c = strcmp(s->domain, domain);
    return c ? c : strcmp(s->op, op);
}

const attr_schema *attr_schema_find(const graph_node *n) {
    int top = top_version(n->domain);
    if (!top || n->opset < 1 || n->opset > top) return NULL;
    /* the first row of (domain, op), then its last version at or below the opset */
    int lo = 0, hi = attr_n_schemas;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp_op(&attr_schemas[mid], n->domain, n->op_type) < 0) lo = mid + 1;
        else hi = mid;
    }
    const attr_schema *found = NULL;
    for (int i = lo; i < attr_n_schemas && !cmp_op(&attr_schemas[i], n->domain, n->op_type); i++)
        if (attr_schemas[i].since <= n->opset) found = &attr_schemas[i];
    return found;
}

/* "alpha, beta" into buf: the schema's attributes, for the message. */
static const char *names_of(const attr_schema *s, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < s->n_attrs && at < size; i++) {
        int w = snprintf(buf + at, size - at, "%s%s", i ? ", " : "", s->attrs[i].name);
        if (w < 0) break;
        at += (size_t)w;
    }
    return buf;
}

og_status *attr_check_node(const graph_node *n, const char *label) {
    const attr_schema *s = attr_schema_find(n);
    if (!s) return NULL;
    for (int i = 0; i < n->n_attrs; i++) {
        const graph_attr *a = &n->attrs[i];
        if (a->ref_attr_name || !strncmp(a->name, "__", 2)) continue;
        const attr_schema_attr *want = NULL;
        for (int j = 0; j < s->n_attrs && !want; j++)
            if (!strcmp(s->attrs[j].name, a->name)) want = &s->attrs[j];
        char lab[256], names[512];
        if (!want)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: node %s: unknown attribute '%s' (%s%s%s at opset %lld has "
                             "%s%s)",
                             label, graph_node_label(n, lab, sizeof lab), a->name, n->domain,
                             n->domain[0] ? "." : "", n->op_type, (long long)n->opset,
                             s->n_attrs ? "attributes " : "no attributes",
                             names_of(s, names, sizeof names));
        if (a->type != want->type)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: attribute '%s' is %s, expected %s",
                             label, graph_node_label(n, lab, sizeof lab), a->name,
                             graph_attr_type_name(a->type), graph_attr_type_name(want->type));
    }
    for (int j = 0; j < s->n_attrs; j++) {
        if (!s->attrs[j].required || graph_attr_find(n, s->attrs[j].name)) continue;
        char lab[256];
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: required attribute '%s' (%s) is "
                         "missing", label, graph_node_label(n, lab, sizeof lab), s->attrs[j].name,
                         graph_attr_type_name(s->attrs[j].type));
    }
    return NULL;
}
