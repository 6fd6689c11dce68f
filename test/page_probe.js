// Injected by test_view.py into the viser page: reads the arm as three.js draws it, and times
// an input event (a typed target, a drag of the handle) to the frame that draws the new arm.
// window.__viserMutable and __viserTestpoints are viser's own hooks for browser tests.
(() => {
  const nodes = () => window.__viserMutable.nodeRefFromName;
  const probe = {
    lastEvent: null,
    // [w, x, y, z, px, py, pz] of the frame drawn for URDF link `link` (local to its parent)
    local(link) {
      const key = Object.keys(nodes()).find(
        (k) => k.startsWith("/arm/visual") && k.endsWith("/" + link));
      const o = nodes()[key];
      const q = o.quaternion, p = o.position;
      return [q.w, q.x, q.y, q.z, p.x, p.y, p.z];
    },
    // the target handle's pose in the arm's base frame: [w, x, y, z, px, py, pz]
    target() {
      const o = nodes()["/arm/base/target"];
      const q = o.quaternion, p = o.position;
      return [q.w, q.x, q.y, q.z, p.x, p.y, p.z];
    },
    armState() {
      return Object.keys(nodes()).filter((k) => k.startsWith("/arm/visual"))
        .map((k) => nodes()[k].quaternion.toArray().concat(nodes()[k].position.toArray()))
        .flat().join(",");
    },
    // resolves when three.js has rendered the arm in a new pose: the times (performance.now(),
    // ms) of the last input event, of the end of that render call, and of the next animation
    // frame after it (by then the frame has been handed to the compositor)
    armMoved(timeoutMs) {
      const before = probe.armState();
      const scene = window.__viserMutable.scene;
      return new Promise((resolve) => {
        const timer = setTimeout(() => { scene.onAfterRender = () => {}; resolve(null); },
          timeoutMs);
        scene.onAfterRender = () => {
          if (probe.armState() === before) return;
          const drawn = performance.now();
          scene.onAfterRender = () => {};
          clearTimeout(timer);
          requestAnimationFrame(() => resolve(
            { event: probe.lastEvent, drawn, nextFrame: performance.now() }));
        };
      });
    },
    // the input of a labelled field of the side panel (index: 0..2 of a vector)
    field(label, index) {
      const l = Array.from(document.querySelectorAll("label"))
        .find((e) => e.textContent === label);
      let box = l;  // up from the label to the row that holds its inputs
      while (box.querySelectorAll("input").length < (index || 0) + 1) box = box.parentElement;
      return box.querySelectorAll("input")[index || 0];
    },
    focusField(label, index) {
      const input = probe.field(label, index);
      input.focus();
      input.select();
      return input.value;
    },
    // the first three.js Points under a scene node (a viser point cloud): its size and colours
    points(name) {
      const o = nodes()[name];
      let found = null;
      if (o) o.traverse((c) => { if (!found && c.type === "Points") found = c; });
      if (!found) return null;
      const a = found.geometry.attributes;
      return { count: a.position.count, colors: Array.from(a.color.array).join(",") };
    },
    // the screen point (CSS px) of a point given in the target handle's own frame
    handlePoint(x, y, z) {
      const o = nodes()["/arm/base/target"];
      const v = o.position.clone().set(x, y, z);
      o.updateWorldMatrix(true, false);
      o.localToWorld(v);
      v.project(window.__viserMutable.camera);
      const r = window.__viserMutable.canvas.getBoundingClientRect();
      return [r.left + (v.x + 1) / 2 * r.width, r.top + (1 - v.y) / 2 * r.height];
    },
  };
  for (const kind of ["input", "pointermove"]) {
    window.addEventListener(kind, () => { probe.lastEvent = performance.now(); }, true);
  }
  window.__ikProbe = probe;
  return true;
})()
