// node-rewrite.js is the JavaScript stub's source rewriting (stub.js):
// static imports become awaited dynamic ones, and top-level await is
// rewritten as Node's REPL rewrites it, so that a program's declarations
// outlive its call in a session. Both keep every line where it was, so a
// frame's line is the program's.
//
// processTopLevelAwait is Node.js's lib/internal/repl/await.js (v24.21.0),
// on Debian's acorn and acorn-walk in place of Node's internal copies and
// without primordials. Node.js is MIT-licensed:
//
//   Copyright Node.js contributors. All rights reserved.
//   Permission is hereby granted, free of charge, to any person obtaining a
//   copy of this software and associated documentation files (the
//   "Software"), to deal in the Software without restriction, including
//   without limitation the rights to use, copy, modify, merge, publish,
//   distribute, sublicense, and/or sell copies of the Software, and to permit
//   persons to whom the Software is furnished to do so, subject to the
//   following conditions: The above copyright notice and this permission
//   notice shall be included in all copies or substantial portions of the
//   Software. THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
'use strict';

const acorn = require('acorn');
const walk = require('acorn-walk');

// rewriteImports turns the top-level import declarations of src into
// awaited dynamic imports (`import x, {y as z} from "m"` becomes `const
// {default: x, y: z} = await import("m")`), padded with the newlines they
// spanned. Code acorn cannot parse as a module is left as it is, for V8 to
// report.
function rewriteImports(src) {
  if (!/\bimport\b/.test(src)) return src;
  let ast;
  try {
    ast = acorn.parse(src, { ecmaVersion: 'latest', sourceType: 'module', allowAwaitOutsideFunction: true,
      allowHashBang: true });
  } catch {
    return src;
  }
  let out = '';
  let pos = 0;
  for (const node of ast.body) {
    if (node.type !== 'ImportDeclaration') continue;
    const source = JSON.stringify(node.source.value);
    const attrs = node.attributes?.length ?
      `, { with: { ${node.attributes.map((a) => src.slice(a.start, a.end)).join(', ')} } }` : '';
    const load = `await import(${source}${attrs})`;
    const ns = node.specifiers.find((s) => s.type === 'ImportNamespaceSpecifier');
    const def = node.specifiers.find((s) => s.type === 'ImportDefaultSpecifier');
    const named = node.specifiers.filter((s) => s.type === 'ImportSpecifier').map((s) => {
      const imported = s.imported.type === 'Literal' ? JSON.stringify(s.imported.value) : s.imported.name;
      return imported === s.local.name ? imported : `${imported}: ${s.local.name}`;
    });
    let rep;
    if (ns) {
      rep = `const ${ns.local.name} = ${load};` + (def ? ` const ${def.local.name} = ${ns.local.name}.default;` : '');
    } else if (def || named.length) {
      rep = `const { ${[...(def ? [`default: ${def.local.name}`] : []), ...named].join(', ')} } = ${load};`;
    } else {
      rep = `${load};`;
    }
    const spanned = src.slice(node.start, node.end).split('\n').length - 1;
    out += src.slice(pos, node.start) + rep + '\n'.repeat(spanned);
    pos = node.end;
  }
  return out + src.slice(pos);
}

function isTopLevelDeclaration(state) {
  return state.ancestors[state.ancestors.length - 2] === state.body;
}

const noop = () => {};
const visitorsWithoutAncestors = {
  ClassDeclaration(node, state, c) {
    if (isTopLevelDeclaration(state)) {
      state.prepend(node, `${node.id.name}=`);
      state.hoistedDeclarationStatements.push(`let ${node.id.name}; `);
    }
    walk.base.ClassDeclaration(node, state, c);
  },
  ForOfStatement(node, state, c) {
    if (node.await === true) {
      state.containsAwait = true;
    }
    walk.base.ForOfStatement(node, state, c);
  },
  FunctionDeclaration(node, state, c) {
    state.prepend(node, `this.${node.id.name} = ${node.id.name}; `);
    state.hoistedDeclarationStatements.push(`var ${node.id.name}; `);
  },
  FunctionExpression: noop,
  ArrowFunctionExpression: noop,
  MethodDefinition: noop,
  AwaitExpression(node, state, c) {
    state.containsAwait = true;
    walk.base.AwaitExpression(node, state, c);
  },
  ReturnStatement(node, state, c) {
    state.containsReturn = true;
    walk.base.ReturnStatement(node, state, c);
  },
  VariableDeclaration(node, state, c) {
    const variableKind = node.kind;
    const isIterableForDeclaration = ['ForOfStatement', 'ForInStatement'].includes(
      state.ancestors[state.ancestors.length - 2].type);

    if (variableKind === 'var' || isTopLevelDeclaration(state)) {
      state.replace(
        node.start,
        node.start + variableKind.length + (isIterableForDeclaration ? 1 : 0),
        variableKind === 'var' && isIterableForDeclaration ?
          '' :
          'void' + (node.declarations.length === 1 ? '' : ' ('),
      );

      if (!isIterableForDeclaration) {
        for (const decl of node.declarations) {
          state.prepend(decl, '(');
          state.append(decl, decl.init ? ')' : '=undefined)');
        }
        if (node.declarations.length !== 1) {
          state.append(node.declarations[node.declarations.length - 1], ')');
        }
      }

      const variableIdentifiersToHoist = [['var', []], ['let', []]];
      function registerVariableDeclarationIdentifiers(node) {
        switch (node.type) {
          case 'Identifier':
            variableIdentifiersToHoist[variableKind === 'var' ? 0 : 1][1].push(node.name);
            break;
          case 'ObjectPattern':
            for (const property of node.properties) {
              registerVariableDeclarationIdentifiers(property.value || property.argument);
            }
            break;
          case 'ArrayPattern':
            for (const element of node.elements) {
              if (element) registerVariableDeclarationIdentifiers(element);
            }
            break;
          case 'AssignmentPattern':
            registerVariableDeclarationIdentifiers(node.left);
            break;
          case 'RestElement':
            registerVariableDeclarationIdentifiers(node.argument);
            break;
        }
      }

      for (const decl of node.declarations) registerVariableDeclarationIdentifiers(decl.id);

      for (const [kind, identifiers] of variableIdentifiersToHoist) {
        if (identifiers.length > 0) {
          state.hoistedDeclarationStatements.push(`${kind} ${identifiers.join(', ')}; `);
        }
      }
    }

    walk.base.VariableDeclaration(node, state, c);
  },
};

const visitors = {};
for (const nodeType of Object.keys(walk.base)) {
  const callback = visitorsWithoutAncestors[nodeType] || walk.base[nodeType];
  visitors[nodeType] = (node, state, c) => {
    const isNew = node !== state.ancestors[state.ancestors.length - 1];
    if (isNew) {
      state.ancestors.push(node);
    }
    callback(node, state, c);
    if (isNew) {
      state.ancestors.pop();
    }
  };
}

// processTopLevelAwait returns src wrapped in an async function whose
// top-level declarations are hoisted out of it (so they outlive the call),
// resolving to {value} of its last expression; null when src has no
// top-level await (or has a top-level return) and runs as it is. A syntax
// error after the first await is thrown as a SyntaxError.
function processTopLevelAwait(src) {
  const wrapPrefix = '(async () => { ';
  const wrapped = `${wrapPrefix}${src} })()`;
  const wrappedArray = wrapped.split('');
  let root;
  try {
    root = acorn.Parser.parse(wrapped, { ecmaVersion: 'latest' });
  } catch (e) {
    // An unterminated program is V8's to report, as any error before the
    // first await.
    if (e.message.startsWith('Unterminated ')) return null;
    const awaitPos = src.indexOf('await');
    const errPos = e.pos - wrapPrefix.length;
    if (awaitPos > errPos) return null;
    if (errPos === awaitPos + 6 && e.message.includes('Expecting Unicode escape sequence')) return null;
    if (errPos === awaitPos + 7 && e.message.includes('Unexpected token')) return null;
    const line = e.loc.line;
    const column = line === 1 ? e.loc.column - wrapPrefix.length : e.loc.column;
    let message = '\n' + src.split('\n', line)[line - 1] + '\n' + ' '.repeat(column) + '^\n\n' +
      e.message.replace(/ \([^)]+\)/, '');
    if (message.endsWith('Unexpected token')) {
      message += " '" + (src[e.pos - wrapPrefix.length] ?? src[src.length - 1]) + "'";
    }
    throw new SyntaxError(message);
  }
  const body = root.body[0].expression.callee.body;
  const state = {
    body,
    ancestors: [],
    hoistedDeclarationStatements: [],
    replace(from, to, str) {
      for (let i = from; i < to; i++) {
        wrappedArray[i] = '';
      }
      if (from === to) str += wrappedArray[from];
      wrappedArray[from] = str;
    },
    prepend(node, str) {
      wrappedArray[node.start] = str + wrappedArray[node.start];
    },
    append(node, str) {
      wrappedArray[node.end - 1] += str;
    },
    containsAwait: false,
    containsReturn: false,
  };

  walk.recursive(body, state, visitors);

  if (!state.containsAwait || state.containsReturn) {
    return null;
  }

  for (let i = body.body.length - 1; i >= 0; i--) {
    const node = body.body[i];
    if (node.type === 'EmptyStatement') continue;
    if (node.type === 'ExpressionStatement') {
      // `return ({ value: (expr) })`: the caller gets the awaited value
      // itself, even when it is a promise.
      state.prepend(node.expression, '{ value: (');
      state.prepend(node, 'return ');
      state.append(node.expression, ') }');
    }
    break;
  }

  return state.hoistedDeclarationStatements.join('') + wrappedArray.join('');
}

module.exports = { processTopLevelAwait, rewriteImports };
