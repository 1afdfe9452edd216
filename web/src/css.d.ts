// Stylesheets are imported for esbuild to bundle into console.css.
declare module "*.css";
