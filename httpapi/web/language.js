// language.js keeps the try-it page's language switch. The languages, and
// the environments that run each, come from the server (the OpenAPI
// document's x-languages: what its configuration enables), never from this
// file: it only holds a title and examples per language it knows. Choosing a
// language loads its example unless the editor holds the visitor's own text,
// which is kept (a button then loads the example, on request only); the
// environment chooser offers the environments that run the language, its
// default chosen. What a server sends goes in as text, never as markup.
"use strict";

/**
 * sandboxdLanguages makes the page's language switch. $ finds an element by
 * id; changed(language, environment) is called after each choice.
 */
function sandboxdLanguages($, changed) {
  /**
   * KNOWN holds, per canonical name, its title and examples: example fills the
   * editor (Python's is the editor's own first text), run and state are the
   * "call it from code" one-liners (state runs in a session and shows what).
   */
  const KNOWN = {
    python: { title: "Python", example: $("code").defaultValue, run: "print(6*7)", state: "x = 41\\nx + 1", shows: "\"result\":\"42\"" },
    javascript: { title: "JavaScript", run: "console.log(6*7)", state: "let x = 41; x + 1", shows: "\"result\":\"42\"",
      example: `const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const name = require("fs").readFileSync(0, "utf8").trim() || "world";

await wait(50);
console.log(\`Hello, \${name}!\`);
console.log("Node.js", process.version);
console.log([1, 2, 3].map((x) => x * x));
` },
    typescript: { title: "TypeScript", run: "const n: number = 6 * 7; console.log(n)", state: "let x: number = 41; x + 1",
      shows: "\"result\":\"42\"", example: `interface Point { x: number; y: number }

function norm(p: Point): number {
  return Math.hypot(p.x, p.y);
}

const points: Point[] = [{ x: 3, y: 4 }, { x: 5, y: 12 }];
for (const p of points) console.log(\`|(\${p.x}, \${p.y})| = \${norm(p)}\`);
` },
    bash: { title: "Bash", run: "echo $((6*7))", state: "x=41; echo $((x + 1))", shows: "\"stdout\":\"42\\n\"",
      example: `printf 'b\\na\\nb\\n' | sort | uniq -c
echo "Bash $BASH_VERSION on $(uname -m)"
seq 5 | awk '{ s += $1 } END { print "sum of 1..5:", s }'
` },
  };

  /** offered is x-languages: [{ language, environments, default_environment }], python alone until it is read. */
  let offered = [{ language: "python", environments: [], default_environment: "" }];
  let chosen = "python";

  const facts = (lang) => KNOWN[lang] || { title: lang, example: "", run: "", state: "", shows: "" };
  const entry = (lang) => offered.find((o) => o.language === lang) || offered[0];

  /** edited is whether the editor holds the visitor's own text: not blank, and no language's example. */
  function edited() {
    const code = $("code").value;
    return code.trim() !== "" && !Object.values(KNOWN).some((k) => k.example === code);
  }

  /** fillEnvironments offers the environments that run lang, its default chosen; shown when there is a choice. */
  function fillEnvironments(lang) {
    const e = entry(lang);
    const opts = e.environments.map((name) => {
      const opt = document.createElement("option");
      opt.value = opt.textContent = String(name);
      opt.selected = name === e.default_environment;
      return opt;
    });
    $("env").replaceChildren(...opts);
    $("env-field").hidden = opts.length < 2;
  }

  /** note says, under the switch, that the visitor's text was kept, with a button to load the example instead. */
  function note(lang) {
    const p = $("lang-note");
    if (!edited() || !facts(lang).example) {
      p.replaceChildren();
      p.hidden = true;
      return;
    }
    const load = document.createElement("button");
    load.type = "button";
    load.textContent = "Load the " + facts(lang).title + " example";
    load.addEventListener("click", () => {
      $("code").value = facts(lang).example;
      note(lang);
      $("code").focus();
    });
    p.replaceChildren("Your code is kept, and runs as " + facts(lang).title + ". ", load);
    p.hidden = false;
  }

  /** choose makes lang the page's language: its example (unless the text is the visitor's), its environments. */
  function choose(lang) {
    chosen = lang;
    if (!edited()) $("code").value = facts(lang).example;
    note(lang);
    fillEnvironments(lang);
    changed(lang, $("env").value);
  }

  /** fill builds the switch from x-languages (doc: the OpenAPI document); one language needs no switch. */
  function fill(doc) {
    const list = doc && Array.isArray(doc["x-languages"]) ? doc["x-languages"].filter((o) => o && typeof o.language === "string" &&
      Array.isArray(o.environments)) : [];
    if (list.length === 0) return;
    offered = list;
    if (!list.some((o) => o.language === chosen)) chosen = list[0].language;
    const box = $("langs");
    box.replaceChildren(...list.map((o) => {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "radio";
      input.name = "language";
      input.value = o.language;
      input.checked = o.language === chosen;
      input.addEventListener("change", () => input.checked && choose(o.language));
      const span = document.createElement("span");
      span.textContent = facts(o.language).title;
      label.append(input, span);
      return label;
    }));
    $("lang-field").hidden = list.length < 2;
    choose(chosen);
  }

  return { fill, language: () => chosen, title: (lang) => facts(lang).title, snippet: facts,
    home: (lang) => entry(lang).default_environment };
}
