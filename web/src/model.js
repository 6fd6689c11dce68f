// Reading model.web.json (written by robot_ik_nn/web/model.py): the JSON checked, the buffers
// decoded and their checksum compared, every size checked against the packing's named indices
// (the file carries them: the packing is defined once, in the Python package).

import { sha256Hex } from './sha256.js';

export const FORMAT = 'robot_ik_nn.web/1';

/** A model file that cannot be used: missing, not JSON, truncated, altered or foreign. */
export class ModelError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ModelError';
  }
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_VALUE = new Int16Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64_VALUE[B64.charCodeAt(i)] = i;

function decodeBase64(text, what) {
  if (typeof text !== 'string') throw new ModelError(`${what}: no base64 text in the file`);
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 61) end--; // '=' padding
  if (text.length % 4 !== 0 || text.length - end > 2) {
    throw new ModelError(
      `${what}: base64 of ${text.length} characters is cut short (the file is truncated or ` +
        'altered)',
    );
  }
  const out = new Uint8Array(Math.floor((end * 3) / 4));
  let bits = 0;
  let acc = 0;
  let o = 0;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    const v = c < 128 ? B64_VALUE[c] : -1;
    if (v < 0) {
      throw new ModelError(`${what}: character ${i} is not base64 (the file is altered)`);
    }
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out.subarray(0, o);
}

function little(bytes, Type, what) {
  const size = Type.BYTES_PER_ELEMENT;
  if (bytes.length % size !== 0) {
    throw new ModelError(`${what}: ${bytes.length} bytes is not a whole number of ${size}-byte values`);
  }
  const out = new Type(bytes.length / size);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  for (let i = 0; i < out.length; i++) {
    out[i] = size === 8 ? view.getFloat64(i * 8, true) : view.getFloat32(i * 4, true);
  }
  return out;
}

function need(obj, key, type) {
  const v = obj[key];
  const ok = type === 'array' ? Array.isArray(v) : typeof v === type && v !== null;
  if (!ok) throw new ModelError(`the model file has no ${key} (${type}): it is not a complete ${FORMAT} file`);
  return v;
}

function sizeCheck(cond, message) {
  if (!cond) throw new ModelError(`sizes that don't fit: ${message}`);
}

/** The checked contents of a model file (an object, or its JSON text). */
export function parseModel(objOrText) {
  let obj = objOrText;
  if (typeof objOrText === 'string') {
    try {
      obj = JSON.parse(objOrText);
    } catch (err) {
      throw new ModelError(
        `the model file is not JSON, or it is truncated (${objOrText.length} characters): ${err.message}`,
      );
    }
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new ModelError('the model file is not a JSON object');
  }
  if (obj.format !== FORMAT) {
    throw new ModelError(
      `not a robot_ik_nn web model: its format is ${JSON.stringify(obj.format)}, expected ` +
        `"${FORMAT}" (write one with robot_ik_nn.web.model.write_web_model)`,
    );
  }
  const layout = need(obj, 'layout', 'object');
  const constants = need(obj, 'constants', 'object');
  const dof = need(obj, 'dof', 'number');
  const heads = need(obj, 'heads', 'number');
  const mb = need(obj, 'model', 'object');
  const nb = need(obj, 'netw', 'object');
  const modelBytes = decodeBase64(mb.base64, 'the model buffer');
  const netwBytes = decodeBase64(nb.base64, 'the network weights');
  const digest = sha256Hex([modelBytes, netwBytes]);
  if (digest !== obj.sha256) {
    throw new ModelError(
      'checksum mismatch: the file is truncated or altered (sha256 of its buffers ' +
        `${digest.slice(0, 12)}..., the file says ${String(obj.sha256).slice(0, 12)}...)`,
    );
  }
  const model = little(modelBytes, Float64Array, 'the model buffer');
  const netw = little(netwBytes, Float32Array, 'the network weights');
  sizeCheck(model.length === mb.length, `model buffer of ${model.length} values, the file says ${mb.length}`);
  sizeCheck(netw.length === nb.length, `network weights of ${netw.length} values, the file says ${nb.length}`);
  const H = layout.header;
  const C = layout.chain;
  sizeCheck(model.length > H.end, `a model buffer of ${model.length} values has no header`);
  sizeCheck(model[H.dof] === dof && Number.isInteger(dof) && dof > 0, `the buffer is for ${model[H.dof]} joints, the file says ${dof}`);
  sizeCheck(model[H.heads] === heads, `the buffer has ${model[H.heads]} heads, the file says ${heads}`);
  const starts = [H.chain, H.cfg, H.meta, H.sizes, H.end].map((k) => model[k]);
  for (let i = 0; i < starts.length; i++) {
    sizeCheck(
      Number.isInteger(starts[i]) && starts[i] <= model.length && (i === 0 || starts[i] >= starts[i - 1]),
      `the buffer's parts do not fit in its ${model.length} values`,
    );
  }
  sizeCheck(starts[1] - starts[0] === (dof + 1) * C.ROW, `a chain of ${starts[1] - starts[0]} values for ${dof} joints`);
  sizeCheck(starts[2] - starts[1] === layout.cfg.CFG, `settings of ${starts[2] - starts[1]} values, expected ${layout.cfg.CFG}`);
  sizeCheck(starts[3] - starts[2] === layout.meta.NM_LIMITS + 3 * dof, 'the network meta layout');
  const sizes = Array.from(model.subarray(starts[3], starts[4]));
  const layers = model[H.layers];
  sizeCheck(sizes.length === layers + 1, `${sizes.length} layer sizes for ${layers} layers`);
  const network = obj.network === true;
  if (network) {
    let weights = 0;
    let biases = 0;
    for (let l = 0; l < layers; l++) {
      weights += sizes[l] * sizes[l + 1];
      biases += sizes[l + 1];
    }
    sizeCheck(weights + biases === netw.length, `${netw.length} network weights for layers ${sizes.join('-')}`);
    sizeCheck(sizes[layers] === 2 * dof * heads, `the last layer's ${sizes[layers]} outputs for ${dof} joints and ${heads} heads`);
    sizeCheck(Math.max(...sizes) <= model[H.width], 'the widest layer');
  }
  const names = need(obj, 'joint_names', 'array');
  sizeCheck(names.length === dof, `${names.length} joint names for ${dof} joints`);
  return {
    robot: String(obj.robot ?? ''),
    dof,
    heads,
    network,
    mode: obj.mode ?? null,
    jointNames: names.slice(),
    baseLink: obj.base_link,
    tipLink: obj.tip_link,
    lower: Float64Array.from(need(obj, 'lower', 'array')),
    upper: Float64Array.from(need(obj, 'upper', 'array')),
    reach: need(obj, 'reach', 'number'),
    settings: Object.freeze({ ...need(obj, 'settings', 'object') }),
    layout,
    constants,
    model,
    netw,
    sizes,
    width: Math.max(1, model[H.width]),
    starts,
  };
}
