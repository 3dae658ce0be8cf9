/* The sandbox's API page. It reads /openapi.json, lists the operations by tag with
 * their parameters and schemas, and sends requests to this same sandbox ("try it").
 * Plain JavaScript, no dependencies, no build step, and no request to any other host.
 */
(function () {
  "use strict";

  var METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"];
  var STORAGE_PREFIX = "ordering-sandbox.docs.";
  var spec = null;
  var authInputs = {}; // security scheme name -> <input>

  // -- small DOM helpers -----------------------------------------------------------------

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) return;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    });
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  /** Append children: nodes, strings, arrays of them; null and false are skipped. */
  function add(node) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === undefined || child === null || child === false) continue;
      if (Array.isArray(child)) {
        child.forEach(function (c) { add(node, c); });
      } else if (typeof child === "string" || typeof child === "number") {
        node.appendChild(document.createTextNode(String(child)));
      } else {
        node.appendChild(child);
      }
    }
    return node;
  }

  function firstSentence(text) {
    var match = /^(.*?\.)(\s|$)/.exec(String(text || ""));
    return match ? match[1] : String(text || "");
  }

  function slug(text) {
    return String(text).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  }

  function remember(key, value) {
    try { window.sessionStorage.setItem(STORAGE_PREFIX + key, value); } catch (e) { /* off */ }
  }

  function recall(key) {
    try { return window.sessionStorage.getItem(STORAGE_PREFIX + key) || ""; } catch (e) {
      return "";
    }
  }

  // -- text: paragraphs, "- " lists, `code` and **bold** --------------------------------

  function inline(text) {
    var parts = String(text).split(/(`[^`]+`|\*\*[^*]+\*\*)/);
    return parts.map(function (part) {
      if (/^`[^`]+`$/.test(part)) return el("code", { text: part.slice(1, -1) });
      if (/^\*\*[^*]+\*\*$/.test(part)) return el("strong", { text: part.slice(2, -2) });
      return part;
    });
  }

  function prose(text, className) {
    var box = el("div", { class: "prose " + (className || "") });
    if (!text) return box;
    String(text).split(/\n\s*\n/).forEach(function (block) {
      var lines = block.split("\n").filter(function (l) { return l.trim(); });
      if (!lines.length) return;
      if (lines.every(function (l) { return /^\s*- /.test(l); })) {
        add(box, el("ul", null, lines.map(function (l) {
          return el("li", null, inline(l.replace(/^\s*- /, "")));
        })));
      } else {
        add(box, el("p", null, inline(lines.join(" "))));
      }
    });
    return box;
  }

  // -- references and schemas ------------------------------------------------------------

  function resolve(ref) {
    if (ref.indexOf("#/") !== 0) return {};
    return ref.slice(2).split("/").reduce(function (node, key) {
      key = key.replace(/~1/g, "/").replace(/~0/g, "~");
      return node && typeof node === "object" ? node[key] : undefined;
    }, spec) || {};
  }

  function refName(ref) {
    var parts = ref.split("/");
    return parts[parts.length - 1];
  }

  function deref(obj) {
    var seen = 0;
    while (obj && obj.$ref && seen++ < 20) obj = resolve(obj.$ref);
    return obj || {};
  }

  function isNullSchema(s) {
    return s && (s.type === "null" || (Array.isArray(s.type) && s.type.length === 1 &&
      s.type[0] === "null"));
  }

  function nonNullVariants(list) {
    return list.filter(function (s) { return !isNullSchema(s); });
  }

  /** allOf flattened into one schema (properties, required and narrowing merged). */
  function merged(schema) {
    if (!schema.allOf) return schema;
    var result = {};
    var parts = schema.allOf.map(deref).map(merged).concat([schema]);
    parts.forEach(function (part) {
      Object.keys(part).forEach(function (key) {
        if (key === "allOf") return;
        if (key === "properties") {
          result.properties = result.properties || {};
          Object.keys(part.properties).forEach(function (name) {
            var before = result.properties[name] ? deref(result.properties[name]) : {};
            result.properties[name] = Object.assign({}, before, part.properties[name]);
          });
        } else if (key === "required") {
          result.required = (result.required || []).concat(part.required);
        } else {
          result[key] = part[key];
        }
      });
    });
    return result;
  }

  function typeLabel(schema) {
    if (!schema || typeof schema !== "object") return "any";
    if (schema.$ref) return refName(schema.$ref);
    if ("const" in schema) return JSON.stringify(schema.const);
    if (schema.enum) return schema.enum.map(function (v) { return JSON.stringify(v); }).join(" | ");
    var variants = schema.oneOf || schema.anyOf;
    if (variants) return variants.map(typeLabel).join(" | ");
    if (schema.allOf) {
      var base = schema.allOf.filter(function (s) { return s.$ref; }).map(typeLabel);
      var code = merged(schema).properties && merged(schema).properties.code;
      var narrowed = code && ("const" in code || code.enum) ? " (code " + typeLabel(code) + ")" : "";
      return (base.join(" & ") || "object") + narrowed;
    }
    var types = Array.isArray(schema.type) ? schema.type : [schema.type || (schema.properties ? "object" : "any")];
    return types.map(function (t) {
      if (t === "array") return "array of " + typeLabel(schema.items);
      if (t === "string" && schema.format) return "string (" + schema.format + ")";
      return t;
    }).join(" | ");
  }

  function constraints(schema) {
    var out = [];
    var s = schema || {};
    if ("minimum" in s) out.push(">= " + s.minimum);
    if ("exclusiveMinimum" in s) out.push("> " + s.exclusiveMinimum);
    if ("maximum" in s) out.push("<= " + s.maximum);
    if ("exclusiveMaximum" in s) out.push("< " + s.exclusiveMaximum);
    if ("minLength" in s) out.push("length >= " + s.minLength);
    if ("maxLength" in s) out.push("length <= " + s.maxLength);
    if ("minItems" in s) out.push("items >= " + s.minItems);
    if ("maxItems" in s) out.push("items <= " + s.maxItems);
    if ("minProperties" in s) out.push("keys >= " + s.minProperties);
    if (s.pattern) out.push("pattern " + s.pattern);
    if ("default" in s) out.push("default " + JSON.stringify(s.default));
    return out.join(", ");
  }

  function isComplex(schema) {
    if (!schema || typeof schema !== "object") return false;
    if (schema.$ref || schema.allOf || schema.properties) return true;
    if (schema.oneOf || schema.anyOf) {
      return nonNullVariants(schema.oneOf || schema.anyOf).some(isComplex);
    }
    if (schema.items) return isComplex(schema.items);
    return typeof schema.additionalProperties === "object";
  }

  /** A schema as a readable tree; `trail` stops recursion through $refs. */
  function renderSchema(schema, trail) {
    trail = trail || [];
    if (!schema || typeof schema !== "object") return el("span", { class: "muted", text: "any" });
    if (schema.$ref) {
      var name = refName(schema.$ref);
      if (trail.indexOf(name) >= 0) return el("span", { class: "type", text: name + " (see above)" });
      return el("div", { class: "schema" },
        el("div", { class: "schema-name", text: name }),
        renderSchema(resolve(schema.$ref), trail.concat([name])));
    }
    if (schema.allOf) return renderSchema(merged(schema), trail);
    var variants = schema.oneOf || schema.anyOf;
    if (variants) {
      var real = nonNullVariants(variants);
      var nullable = real.length < variants.length;
      if (real.length === 1) {
        return el("div", null, nullable ? el("div", { class: "muted", text: "or null" }) : null,
          renderSchema(real[0], trail));
      }
      return el("div", { class: "variants" },
        el("div", { class: "muted", text: (schema.oneOf ? "exactly one of" : "any of") +
          (nullable ? " (or null)" : "") }),
        real.map(function (v) { return el("div", { class: "variant" }, renderSchema(v, trail)); }));
    }
    var types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (schema.properties || types.indexOf("object") >= 0) return renderObject(schema, trail);
    if (types.indexOf("array") >= 0 && isComplex(schema.items)) {
      return el("div", null, el("div", { class: "type", text: typeLabel(schema) }),
        el("div", { class: "nested" }, renderSchema(schema.items, trail)));
    }
    return el("div", null, el("span", { class: "type", text: typeLabel(schema) }),
      constraints(schema) ? el("span", { class: "muted", text: " " + constraints(schema) }) : null,
      schema.description ? prose(schema.description, "inline") : null);
  }

  function renderObject(schema, trail) {
    var required = schema.required || [];
    var props = schema.properties || {};
    var rows = Object.keys(props).map(function (name) {
      var prop = props[name];
      var shown = prop.$ref ? deref(prop) : prop;
      var cell = el("td", null,
        prop.description || shown.description ? prose(prop.description || shown.description) : null,
        constraints(prop) ? el("div", { class: "muted", text: constraints(prop) }) : null);
      if (isComplex(prop)) {
        var inner = prop.$ref ? prop : Object.assign({}, prop, { description: undefined });
        add(cell, el("details", { class: "nested" }, el("summary", { text: "structure" }),
          renderSchema(inner, trail)));
      }
      return el("tr", null,
        el("td", null, el("code", { text: name }),
          required.indexOf(name) >= 0 ? el("span", { class: "req", title: "required", text: " *" }) : null),
        el("td", { class: "type", text: typeLabel(prop) }),
        cell);
    });
    var extra = schema.additionalProperties;
    var note = null;
    if (extra === false) note = "No other keys.";
    else if (extra && typeof extra === "object") note = "Any other key: " + typeLabel(extra) + ".";
    return el("div", { class: "object" },
      schema.description ? prose(schema.description) : null,
      rows.length ? el("table", { class: "props" },
        el("thead", null, el("tr", null, el("th", { text: "field" }), el("th", { text: "type" }),
          el("th", { text: "notes" }))),
        el("tbody", null, rows)) : null,
      note ? el("div", { class: "muted", text: note }) : null);
  }

  /** A plausible value for a schema, for pre-filling request bodies. */
  function exampleOf(schema, depth) {
    depth = depth || 0;
    if (!schema || depth > 6) return null;
    if (schema.$ref) return exampleOf(resolve(schema.$ref), depth + 1);
    if ("example" in schema) return schema.example;
    if (schema.examples && schema.examples.length) return schema.examples[0];
    if ("default" in schema) return schema["default"];
    if ("const" in schema) return schema.const;
    if (schema.enum) return schema.enum[0];
    if (schema.allOf) return exampleOf(merged(schema), depth + 1);
    if (schema.oneOf || schema.anyOf) {
      return exampleOf(nonNullVariants(schema.oneOf || schema.anyOf)[0], depth + 1);
    }
    var types = Array.isArray(schema.type) ? schema.type : [schema.type];
    var type = types.filter(function (t) { return t !== "null"; })[0];
    if (schema.properties || type === "object") {
      var out = {};
      var keys = schema.required && schema.required.length ? schema.required
        : Object.keys(schema.properties || {});
      keys.forEach(function (k) {
        if (schema.properties && schema.properties[k]) {
          out[k] = exampleOf(schema.properties[k], depth + 1);
        }
      });
      return out;
    }
    if (type === "array") return [exampleOf(schema.items, depth + 1)];
    if (type === "integer" || type === "number") {
      return "minimum" in schema ? schema.minimum : 1;
    }
    if (type === "boolean") return false;
    if (type === "string") return schema.format === "date-time" ? new Date().toISOString() : "";
    return null;
  }

  // -- operations --------------------------------------------------------------------------

  function operations() {
    var list = [];
    Object.keys(spec.paths || {}).forEach(function (path) {
      var item = spec.paths[path];
      METHODS.forEach(function (method) {
        if (item[method]) {
          list.push({ path: path, method: method, op: item[method],
                      params: (item.parameters || []).concat(item[method].parameters || []) });
        }
      });
    });
    return list;
  }

  function securityOf(op) {
    return op.security || spec.security || [];
  }

  function securityLabel(op) {
    var names = [];
    securityOf(op).forEach(function (req) {
      var keys = Object.keys(req);
      names.push(keys.length ? keys.join(" + ") : "none");
    });
    if (!names.length) return "public";
    return names.join(" or ");
  }

  function renderOperation(entry) {
    var op = entry.op;
    var search = [entry.method, entry.path, op.summary, op.operationId, (op.tags || []).join(" ")]
      .join(" ").toLowerCase();
    var details = el("details", { class: "op method-" + entry.method, id: op.operationId,
                                  "data-search": search, "data-alias": op["x-alias-of"] ? "1" : null });
    var summary = el("summary", null,
      el("span", { class: "method", text: entry.method.toUpperCase() }),
      el("code", { class: "path", text: entry.path }),
      el("span", { class: "summary", text: op.summary || "" }),
      el("span", { class: "lock", title: "authentication", text: securityLabel(op) }));
    add(details, summary);
    var filled = false;
    details.addEventListener("toggle", function () {
      if (details.open && !filled) {
        filled = true;
        add(details, renderOperationBody(entry));
      }
    });
    return details;
  }

  function renderOperationBody(entry) {
    var op = entry.op;
    var box = el("div", { class: "op-body" },
      el("div", { class: "muted small" }, "operationId ", el("code", { text: op.operationId }),
        op["x-alias-of"] ? [" (alias of ", el("a", { href: "#" + op["x-alias-of"],
                                                   text: op["x-alias-of"] }), ")"] : null),
      op.description ? prose(op.description) : null);
    if (entry.params.length) {
      add(box, el("h4", { text: "Parameters" }), el("table", { class: "props" },
        el("thead", null, el("tr", null, el("th", { text: "name" }), el("th", { text: "in" }),
          el("th", { text: "type" }), el("th", { text: "notes" }))),
        el("tbody", null, entry.params.map(function (p) {
          p = deref(p);
          return el("tr", null,
            el("td", null, el("code", { text: p.name }),
              p.required ? el("span", { class: "req", text: " *" }) : null),
            el("td", { text: p["in"] }),
            el("td", { class: "type", text: typeLabel(p.schema) }),
            el("td", null, p.description ? prose(p.description) : null));
        }))));
    }
    if (op.requestBody) {
      var rb = deref(op.requestBody);
      add(box, el("h4", null, "Request body ",
        el("span", { class: "muted", text: (rb.required ? "required; " : "optional; ") +
          Object.keys(rb.content || {}).join(", ") })),
        rb.description ? prose(rb.description) : null);
      var media = firstMedia(rb.content);
      if (media) add(box, renderSchema(media.schema));
    }
    add(box, el("h4", { text: "Responses" }), renderResponses(op.responses || {}));
    add(box, renderTryIt(entry));
    return box;
  }

  function firstMedia(content) {
    if (!content) return null;
    var type = content["application/json"] ? "application/json" : Object.keys(content)[0];
    return type ? content[type] : null;
  }

  function renderResponses(responses) {
    return el("div", { class: "responses" }, Object.keys(responses).map(function (status) {
      var raw = responses[status];
      var resp = deref(raw);
      var media = firstMedia(resp.content);
      var headers = Object.keys(resp.headers || {});
      return el("details", { class: "response status-" + status.charAt(0) },
        el("summary", null, el("span", { class: "code", text: status }), " ",
          el("span", null, inline(firstSentence(resp.description))),
          media ? el("span", { class: "muted", text: "  " + typeLabel(media.schema) }) : null),
        el("div", { class: "response-body" },
          prose(resp.description),
          raw.$ref ? el("div", { class: "muted small", text: "shared: " + refName(raw.$ref) }) : null,
          headers.length ? el("div", { class: "muted" }, "Headers: ",
            headers.map(function (h) { return el("code", { text: h + " " }); })) : null,
          media ? renderSchema(media.schema) : null,
          media && "example" in media ? el("pre", { class: "example",
            text: JSON.stringify(media.example, null, 2) }) : null));
    }));
  }

  // -- try it ------------------------------------------------------------------------------

  function renderTryIt(entry) {
    var op = entry.op;
    var fields = {};
    var form = el("form", { class: "try", autocomplete: "off" }, el("h4", { text: "Try it" }));
    entry.params.map(deref).forEach(function (p) {
      var choices = p.schema && p.schema.enum;
      var input = choices
        ? el("select", { "aria-label": p.name }, el("option", { value: "", text: "(any)" }),
          choices.map(function (c) { return el("option", { value: c, text: c }); }))
        : el("input", { type: "text", spellcheck: "false",
          placeholder: p.required ? "required" : "optional", "aria-label": p.name });
      fields[p["in"] + ":" + p.name] = { param: p, input: input };
      add(form, el("label", { class: "field" },
        el("span", null, el("code", { text: p.name }), el("span", { class: "muted", text: " " + p["in"] })),
        input));
    });
    var bodyArea = null;
    var typeSelect = null;
    if (op.requestBody) {
      var rb = deref(op.requestBody);
      var types = Object.keys(rb.content || {});
      var media = firstMedia(rb.content) || {};
      var sample = "example" in media ? media.example : exampleOf(media.schema);
      bodyArea = el("textarea", { rows: 8, spellcheck: "false", "aria-label": "request body" });
      bodyArea.value = sample === undefined ? "" : JSON.stringify(sample, null, 2);
      if (types.length > 1) {
        typeSelect = el("select", { "aria-label": "content type" }, types.map(function (t) {
          return el("option", { value: t, text: t });
        }));
      }
      add(form, el("label", { class: "field wide" },
        el("span", null, "body ", typeSelect || el("span", { class: "muted", text: types[0] || "" })),
        bodyArea));
    }
    var auth = el("div", { class: "muted small", text: "Authorization: " + securityLabel(op) +
      " (tokens at the top of the page)" });
    var send = el("button", { type: "submit", text: "Send" });
    var curl = el("pre", { class: "curl", hidden: true });
    var result = el("div", { class: "result", "aria-live": "polite" });
    add(form, auth, el("div", { class: "actions" }, send), curl, result);

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var request = buildRequest(entry, fields, bodyArea, typeSelect);
      if (request.error) {
        result.replaceChildren(el("div", { class: "error", text: request.error }));
        return;
      }
      curl.hidden = false;
      curl.textContent = curlFor(request);
      send.disabled = true;
      result.replaceChildren(el("div", { class: "muted", text: "Sending..." }));
      perform(entry, request).then(function (view) {
        result.replaceChildren(view);
      }).finally(function () { send.disabled = false; });
    });
    return form;
  }

  function buildRequest(entry, fields, bodyArea, typeSelect) {
    var path = entry.path;
    var query = [];
    var headers = {};
    var missing = [];
    Object.keys(fields).forEach(function (key) {
      var p = fields[key].param;
      var value = fields[key].input.value;
      if (value === "") {
        if (p.required) missing.push(p.name);
        return;
      }
      if (p["in"] === "path") path = path.replace("{" + p.name + "}", encodeURIComponent(value));
      else if (p["in"] === "query") query.push(encodeURIComponent(p.name) + "=" + encodeURIComponent(value));
      else if (p["in"] === "header") headers[p.name] = value;
    });
    if (missing.length) return { error: "Fill in: " + missing.join(", ") };
    var token = tokenFor(entry.op);
    if (token) headers.Authorization = "Bearer " + token;
    var body;
    if (bodyArea && bodyArea.value.trim()) {
      body = bodyArea.value;
      headers["Content-Type"] = typeSelect ? typeSelect.value : "application/json";
    }
    return {
      method: entry.method.toUpperCase(),
      url: path + (query.length ? "?" + query.join("&") : ""),
      headers: headers,
      body: body
    };
  }

  function tokenFor(op) {
    var requirements = securityOf(op);
    for (var i = 0; i < requirements.length; i++) {
      var names = Object.keys(requirements[i]);
      for (var j = 0; j < names.length; j++) {
        var input = authInputs[names[j]];
        if (input && input.value.trim()) return input.value.trim();
      }
    }
    return "";
  }

  function perform(entry, request) {
    var started = performance.now();
    return fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      credentials: "omit",
      cache: "no-store"
    }).then(function (response) {
      return response.text().then(function (text) {
        var elapsed = Math.round(performance.now() - started);
        var parsed = null;
        try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
        if (response.ok && parsed && typeof parsed.access_token === "string" &&
            !securityOf(entry.op).length && authInputs.bearerAuth) {
          setToken("bearerAuth", parsed.access_token);
        }
        var documented = isDocumented(entry.op.responses || {}, response.status);
        var shown = ["content-type", "allow"].filter(function (h) { return response.headers.get(h); });
        return el("div", null,
          el("div", { class: "status-line status-" + String(response.status).charAt(0) },
            el("strong", { text: response.status + " " + response.statusText }),
            el("span", { class: "muted", text: "  " + elapsed + " ms" }),
            el("span", { class: documented ? "muted" : "error",
                         text: documented ? "  documented" : "  not documented for this operation" })),
          shown.length ? el("div", { class: "muted small" }, shown.map(function (h) {
            return el("div", { text: h + ": " + response.headers.get(h) });
          })) : null,
          el("pre", { class: "response-text",
                      text: parsed !== null ? JSON.stringify(parsed, null, 2) : text }));
      });
    }).catch(function (error) {
      return el("div", { class: "error", text: "The request failed: " + error });
    });
  }

  function isDocumented(responses, status) {
    var code = String(status);
    return code in responses || (code.charAt(0) + "XX") in responses || "default" in responses;
  }

  function curlFor(request) {
    var quote = function (s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; };
    var parts = ["curl -s -X " + request.method + " " + quote(window.location.origin + request.url)];
    Object.keys(request.headers).forEach(function (name) {
      parts.push("-H " + quote(name + ": " + request.headers[name]));
    });
    if (request.body !== undefined) parts.push("--data-raw " + quote(request.body));
    return parts.join(" \\\n  ");
  }

  // -- page ------------------------------------------------------------------------------

  function setToken(name, value) {
    if (!authInputs[name]) return;
    authInputs[name].value = value;
    remember("auth." + name, value);
  }

  function renderAuth() {
    var box = document.getElementById("auth");
    var schemes = (spec.components && spec.components.securitySchemes) || {};
    Object.keys(schemes).forEach(function (name) {
      var scheme = schemes[name];
      var input = el("input", { type: "text", spellcheck: "false", placeholder: name,
                                "aria-label": name, title: scheme.description || name });
      input.value = recall("auth." + name);
      input.addEventListener("input", function () { remember("auth." + name, input.value.trim()); });
      authInputs[name] = input;
      add(box, el("label", { class: "token", title: scheme.description || "" },
        el("span", { text: name }), input));
    });
  }

  function renderWebhooks() {
    var hooks = spec.webhooks || {};
    var names = Object.keys(hooks);
    if (!names.length) return null;
    return el("section", { class: "tag", id: "webhooks" },
      el("h2", { text: "Webhooks" }),
      prose("Requests the sandbox sends to your webhook URL."),
      names.map(function (name) {
        var item = hooks[name];
        return METHODS.filter(function (m) { return item[m]; }).map(function (method) {
          var op = item[method];
          var media = op.requestBody ? firstMedia(deref(op.requestBody).content) : null;
          return el("details", { class: "op method-" + method, id: op.operationId },
            el("summary", null, el("span", { class: "method", text: method.toUpperCase() }),
              el("code", { class: "path", text: name }),
              el("span", { class: "summary", text: op.summary || "" })),
            el("div", { class: "op-body" },
              op.description ? prose(op.description) : null,
              (op.parameters || []).length ? el("div", { class: "muted" }, "Headers: ",
                op.parameters.map(function (p) { return el("code", { text: p.name + " " }); })) : null,
              media ? [el("h4", { text: "Body" }), renderSchema(media.schema)] : null,
              el("h4", { text: "Answer" }), renderResponses(op.responses || {})));
        });
      }));
  }

  function renderSchemas() {
    var schemas = (spec.components && spec.components.schemas) || {};
    return el("section", { class: "tag", id: "schemas" },
      el("h2", { text: "Schemas" }),
      Object.keys(schemas).sort().map(function (name) {
        var d = el("details", { class: "op schema-entry", id: "schema-" + name },
          el("summary", null, el("code", { class: "path", text: name }),
            el("span", { class: "summary" }, inline(firstSentence(schemas[name].description)))));
        var filled = false;
        d.addEventListener("toggle", function () {
          if (d.open && !filled) {
            filled = true;
            add(d, el("div", { class: "op-body" }, renderSchema(schemas[name], [name])));
          }
        });
        return d;
      }));
  }

  function render() {
    document.title = spec.info.title + ": API documentation";
    document.getElementById("title").textContent = spec.info.title;
    document.getElementById("version").textContent = "v" + spec.info.version + " / OpenAPI " + spec.openapi;
    renderAuth();

    var byTag = {};
    var tagOrder = (spec.tags || []).map(function (t) { return t.name; });
    operations().forEach(function (entry) {
      var tag = (entry.op.tags && entry.op.tags[0]) || "Other";
      if (!byTag[tag]) {
        byTag[tag] = [];
        if (tagOrder.indexOf(tag) < 0) tagOrder.push(tag);
      }
      byTag[tag].push(entry);
    });
    var tagInfo = {};
    (spec.tags || []).forEach(function (t) { tagInfo[t.name] = t; });

    var main = document.getElementById("main");
    var nav = document.getElementById("nav");
    main.replaceChildren(prose(spec.info.description, "intro"));
    var navList = el("ul");
    tagOrder.forEach(function (tag) {
      if (!byTag[tag]) return;
      var id = "tag-" + slug(tag);
      add(navList, el("li", { "data-tag": id }, el("a", { href: "#" + id, text: tag })));
      add(main, el("section", { class: "tag", id: id },
        el("h2", { text: tag }),
        tagInfo[tag] && tagInfo[tag].description ? prose(tagInfo[tag].description) : null,
        byTag[tag].map(renderOperation)));
    });
    var hooks = renderWebhooks();
    if (hooks) {
      add(main, hooks);
      add(navList, el("li", null, el("a", { href: "#webhooks", text: "Webhooks" })));
    }
    add(main, renderSchemas());
    add(navList, el("li", null, el("a", { href: "#schemas", text: "Schemas" })));
    nav.replaceChildren(navList);

    var filter = document.getElementById("filter");
    var aliases = document.getElementById("show-aliases");
    aliases.checked = recall("aliases") === "1";
    filter.addEventListener("input", applyFilter);
    aliases.addEventListener("change", function () {
      remember("aliases", aliases.checked ? "1" : "");
      applyFilter();
    });
    applyFilter();
    openFromHash();
    window.addEventListener("hashchange", openFromHash);
  }

  function applyFilter() {
    var query = document.getElementById("filter").value.trim().toLowerCase();
    var showAliases = document.getElementById("show-aliases").checked;
    document.querySelectorAll("section.tag").forEach(function (section) {
      var ops = section.querySelectorAll("details.op[data-search]");
      if (!ops.length) return;
      var visible = 0;
      ops.forEach(function (op) {
        var hide = (!showAliases && op.getAttribute("data-alias")) ||
          (query && op.getAttribute("data-search").indexOf(query) < 0);
        op.hidden = !!hide;
        if (!hide) visible++;
      });
      section.hidden = visible === 0;
      var link = document.querySelector('#nav li[data-tag="' + section.id + '"]');
      if (link) link.hidden = visible === 0;
    });
  }

  function openFromHash() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!id) return;
    var target = document.getElementById(id);
    if (!target) return;
    if (target.tagName === "DETAILS") {
      if (target.hidden) {
        document.getElementById("show-aliases").checked = true;
        applyFilter();
      }
      target.open = true;
    }
    target.scrollIntoView();
  }

  function start() {
    fetch("/openapi.json", { cache: "no-store", credentials: "omit" })
      .then(function (response) {
        if (!response.ok) throw new Error("GET /openapi.json answered " + response.status);
        return response.json();
      })
      .then(function (document_) {
        spec = document_;
        render();
      })
      .catch(function (error) {
        var status = document.getElementById("status");
        status.className = "status error";
        status.textContent = "Could not load /openapi.json: " + error.message;
      });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
